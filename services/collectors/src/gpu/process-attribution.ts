import { open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isJobText, MAX_JOB_TEXT_LENGTH, type JobAttribution } from '@gpualert/schema';
import { cgroupOwner, MAX_CGROUP_BYTES } from './cgroup-path.ts';
import { MAX_PODS_FILE_BYTES, parsePodsFile, type PodIndex } from './pods-file.ts';
import { MAX_SLURM_JOBS_FILE_BYTES, parseSlurmJobs, type SlurmJobInfo } from './slurm-jobs.ts';

/** The environ read per process: a training job's environment is a few KiB; Linux caps it near 2 MiB. */
export const MAX_ENVIRON_BYTES = 256 * 1024;
/** The passwd file read: a site with directory users has a short local one. */
export const MAX_PASSWD_BYTES = 4 * 1024 * 1024;
/** Compute processes attributed per scrape: 8 ranks on each of 16 GPUs, twice over. */
export const MAX_ATTRIBUTED_PROCESSES = 256;

export interface AttributionOptions {
  /** The filesystem root `/proc` and `/etc/passwd` are read under: `/` on a host, a fixture tree in tests. */
  readonly root: string;
  /** The kubelet's `/pods` or a pod-resources dump as JSON: namespace and pod names. */
  readonly podsFile?: string;
  /** A saved `squeue` / `sacct` / `scontrol show job` listing: the user and name of a job the cgroup names only by id. */
  readonly slurmJobsFile?: string;
}

/** What one process's environment says (`SLURM_JOB_ID`, `SLURM_JOB_USER`, `SLURM_JOB_NAME`). */
export function slurmEnvironment(environ: Buffer | string): { job?: string; user?: string; name?: string } {
  const text = typeof environ === 'string' ? environ : environ.subarray(0, MAX_ENVIRON_BYTES).toString('utf8');
  const out: { job?: string; user?: string; name?: string } = {};
  for (const entry of text.split('\0')) {
    if (!entry.startsWith('SLURM_JOB_')) continue;
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq);
    const value = entry.slice(eq + 1);
    if (key === 'SLURM_JOB_ID') out.job = value;
    else if (key === 'SLURM_JOB_USER') out.user = value;
    else if (key === 'SLURM_JOB_NAME') out.name = value;
  }
  return out;
}

/** uid → user name from a passwd file (`name:x:uid:gid:…`). */
export function parsePasswd(text: string): Map<number, string> {
  const users = new Map<number, string>();
  for (const line of text.split('\n')) {
    const [user, , uid] = line.split(':');
    const n = Number(uid);
    if (user && uid !== undefined && uid !== '' && Number.isSafeInteger(n) && !users.has(n)) users.set(n, user);
  }
  return users;
}

/** The real uid from `/proc/<pid>/status` (`Uid:\treal\teffective\t…`). */
export function statusUid(text: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith('Uid:'));
  const n = Number(line?.slice(4).trim().split(/\s+/)[0]);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * Who runs a process, from what the kernel shows of it: Slurm (environment first, then the
 * cgroup path), Kubernetes (pod UID and container from the cgroup; names from the pods file),
 * else its user and command. Every value is cut to a bounded single line; none is a key.
 */
export function attributionOf(facts: {
  environ?: string | Buffer;
  cgroup?: string;
  uid?: number;
  command?: string;
  users: ReadonlyMap<number, string>;
  pods?: PodIndex;
  slurmJobs?: ReadonlyMap<string, SlurmJobInfo>;
}): JobAttribution | undefined {
  const env = facts.environ !== undefined ? slurmEnvironment(facts.environ) : {};
  const owner = facts.cgroup !== undefined ? cgroupOwner(facts.cgroup) : {};
  const uidUser = facts.uid !== undefined ? facts.users.get(facts.uid) : undefined;
  const slurmUser = owner.slurmUid !== undefined ? facts.users.get(owner.slurmUid) : undefined;
  const pod = owner.podUid ? facts.pods?.byUid.get(owner.podUid) : undefined;
  const container = owner.containerId ? (facts.pods?.containerNames.get(owner.containerId) ?? owner.containerId) : undefined;
  const job = env.job ?? owner.slurmJob;
  const listed = job !== undefined ? facts.slurmJobs?.get(job) : undefined;
  const out: JobAttribution = {};
  const set = (key: keyof JobAttribution, value: string | undefined) => {
    const v = value === undefined ? undefined : clean(value);
    if (v !== undefined && isJobText(v)) out[key] = v;
  };
  set('job', job);
  set('job_user', env.user ?? slurmUser ?? listed?.user ?? uidUser);
  set('job_name', env.name ?? listed?.name ?? (job === undefined && !owner.podUid ? facts.command : undefined));
  set('namespace', pod?.namespace);
  set('pod', pod?.pod);
  set('pod_uid', owner.podUid);
  set('container', container);
  return Object.keys(out).length > 0 ? out : undefined;
}

function clean(value: string): string {
  return value
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')
    .trim()
    .slice(0, MAX_JOB_TEXT_LENGTH);
}

async function readBounded(path: string, max: number): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(path, 'r');
    const buffer = Buffer.alloc(max);
    const { bytesRead } = await handle.read(buffer, 0, max, 0);
    return buffer.subarray(0, bytesRead);
  } catch {
    return undefined; // gone (the process ended) or not ours to read: attribution is best effort
  } finally {
    await handle?.close();
  }
}

/**
 * Attributes processes under a root, reading `/proc/<pid>/{environ,cgroup,status,comm}` and
 * `/etc/passwd` at most once per call, and the pods file again only when it changed.
 */
export class ProcessAttributor {
  private pods: { mtimeMs: number; index: PodIndex } | undefined;
  private podsProblem: string | undefined;
  private slurm: { mtimeMs: number; jobs: ReadonlyMap<string, SlurmJobInfo> } | undefined;
  private slurmProblem: string | undefined;

  constructor(private readonly options: AttributionOptions) {}

  /** The last reason the pods file could not be used, for a warning; undefined when it was. */
  get podsFileProblem(): string | undefined {
    return this.podsProblem;
  }

  /** What the Slurm listing could not say (its problems, or why it could not be read); undefined when nothing. */
  get slurmJobsProblem(): string | undefined {
    return this.slurmProblem;
  }

  async attribute(pids: readonly number[]): Promise<Map<number, JobAttribution>> {
    const out = new Map<number, JobAttribution>();
    if (pids.length === 0) return out;
    const passwd = await readBounded(join(this.options.root, 'etc', 'passwd'), MAX_PASSWD_BYTES);
    const users = parsePasswd(passwd?.toString('utf8') ?? '');
    const pods = await this.loadPods();
    const slurmJobs = await this.loadSlurmJobs();
    for (const pid of pids.slice(0, MAX_ATTRIBUTED_PROCESSES)) {
      if (!Number.isSafeInteger(pid) || pid <= 0) continue;
      const dir = join(this.options.root, 'proc', String(pid));
      const [environ, cgroup, status, comm] = await Promise.all([
        readBounded(join(dir, 'environ'), MAX_ENVIRON_BYTES),
        readBounded(join(dir, 'cgroup'), MAX_CGROUP_BYTES),
        readBounded(join(dir, 'status'), 16 * 1024),
        readBounded(join(dir, 'comm'), 256),
      ]);
      const uid = status ? statusUid(status.toString('utf8')) : undefined;
      const attribution = attributionOf({
        users,
        ...(pods ? { pods } : {}),
        ...(slurmJobs ? { slurmJobs } : {}),
        ...(environ ? { environ } : {}),
        ...(cgroup ? { cgroup: cgroup.toString('utf8') } : {}),
        ...(uid !== undefined ? { uid } : {}),
        ...(comm ? { command: comm.toString('utf8').trim() } : {}),
      });
      if (attribution) out.set(pid, attribution);
    }
    return out;
  }

  /** Which pod holds a GPU by its UUID, per a pod-resources dump. */
  async podOfGpu(uuid: string): Promise<{ namespace: string; pod: string; container: string } | undefined> {
    return (await this.loadPods())?.byGpu.get(uuid);
  }

  private async loadPods(): Promise<PodIndex | undefined> {
    const file = this.options.podsFile;
    if (!file) return undefined;
    try {
      const info = await stat(file);
      if (this.pods && this.pods.mtimeMs === info.mtimeMs) return this.pods.index;
      if (info.size > MAX_PODS_FILE_BYTES) {
        this.podsProblem = `${file}: ${info.size} bytes, more than ${MAX_PODS_FILE_BYTES}`;
        return this.pods?.index;
      }
      const parsed = parsePodsFile(await readFile(file, 'utf8'));
      if (typeof parsed === 'string') {
        this.podsProblem = `${file}: ${parsed}`;
        return this.pods?.index;
      }
      this.pods = { mtimeMs: info.mtimeMs, index: parsed };
      this.podsProblem = undefined;
      return parsed;
    } catch (error) {
      this.podsProblem = `${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
      return this.pods?.index;
    }
  }

  /** The Slurm listing, read again only when it changed; the last good one while a new one cannot be read. */
  private async loadSlurmJobs(): Promise<ReadonlyMap<string, SlurmJobInfo> | undefined> {
    const file = this.options.slurmJobsFile;
    if (!file) return undefined;
    try {
      const info = await stat(file);
      if (this.slurm && this.slurm.mtimeMs === info.mtimeMs) return this.slurm.jobs;
      if (info.size > MAX_SLURM_JOBS_FILE_BYTES) {
        this.slurmProblem = `${file}: ${info.size} bytes, more than ${MAX_SLURM_JOBS_FILE_BYTES}`;
        return this.slurm?.jobs;
      }
      const { jobs, problems } = parseSlurmJobs(await readFile(file, 'utf8'));
      this.slurmProblem = problems.length > 0 ? `${file}: ${problems.join('; ')}` : undefined;
      this.slurm = { mtimeMs: info.mtimeMs, jobs };
      return jobs;
    } catch (error) {
      this.slurmProblem = `${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
      return this.slurm?.jobs;
    }
  }
}
