/**
 * A saved Slurm job listing (`squeue`, `sacct`, `sacct -P`, `scontrol show job`) → each job's
 * user and name by job id, for attributing a GPU process whose cgroup names only its job (cgroup
 * v2's `job_J`) and whose environment cannot be read. Pure; what it cannot read is said.
 */

export interface SlurmJobInfo {
  readonly user?: string;
  readonly name?: string;
}

/** Jobs kept from one listing: a large cluster's queue holds tens of thousands. */
export const MAX_SLURM_JOBS = 100_000;
/** The largest listing read (`scontrol show job` is ~1.5 KiB a job). */
export const MAX_SLURM_JOBS_FILE_BYTES = 64 * 1024 * 1024;
/** Problems said per listing. */
const MAX_PROBLEMS = 10;

/** A job id as Slurm prints it: `65646`, an array task `1234_7`; a step (`65646.batch`, `65646.0`) is not a job. */
const JOB_ID = /^\d{1,12}(?:_\d{1,9})?$/;
const STEP = /^\d{1,12}(?:_\d{1,9})?(?:\+\d+)?\.[\w-]+$/;

export function parseSlurmJobs(text: string): { jobs: Map<string, SlurmJobInfo>; problems: string[] } {
  return /(?:^|\s)JobId=\d/.test(text) ? scontrolJobs(text) : tableJobs(text);
}

/** `scontrol show job`: one record per `JobId=`, `Key=Value` words (`UserId=phil(5136)`, `JobName=` or the older `Name=`). */
function scontrolJobs(text: string): { jobs: Map<string, SlurmJobInfo>; problems: string[] } {
  const jobs = new Map<string, SlurmJobInfo>();
  const problems: string[] = [];
  const records = text.split(/(?=(?:^|\s)JobId=\d)/);
  for (const record of records) {
    const words = new Map<string, string>();
    for (const m of record.matchAll(/(?:^|\s)([A-Za-z][\w/:]{0,40})=(\S{0,512})/g)) if (m[1] && m[2] !== undefined && !words.has(m[1])) words.set(m[1], m[2]);
    const id = words.get('JobId');
    if (id === undefined) continue;
    if (!JOB_ID.test(id)) {
      if (problems.length < MAX_PROBLEMS) problems.push(`JobId=${id.slice(0, 40)}: not a job id`);
      continue;
    }
    if (jobs.size >= MAX_SLURM_JOBS) break;
    const user = /^([^()\s]{1,256})(?:\(\d+\))?$/.exec(words.get('UserId') ?? '')?.[1];
    const name = words.get('JobName') ?? words.get('Name');
    jobs.set(id, { ...(user ? { user } : {}), ...(name ? { name } : {}) });
  }
  if (jobs.size === 0) problems.push('no JobId= record could be read');
  return { jobs, problems };
}

/** `squeue` / `sacct` tables: a header naming JOBID (any case), NAME or JOBNAME, USER; `|` between cells with -P. */
function tableJobs(text: string): { jobs: Map<string, SlurmJobInfo>; problems: string[] } {
  const jobs = new Map<string, SlurmJobInfo>();
  const problems: string[] = [];
  const lines = text.split('\n');
  let columns: { id: number; name: number; user: number; pipe: boolean } | undefined;
  let headerAt = 0;
  for (let i = 0; i < lines.length && jobs.size < MAX_SLURM_JOBS; i++) {
    const line = (lines[i] ?? '').replace(/\r$/, '').trim();
    if (line === '' || /^-+(?:[\s|]+-+)*\|?$/.test(line)) continue;
    const pipe = line.includes('|');
    const cells = pipe ? line.split('|').map((c) => c.trim()) : line.split(/\s+/);
    const id = cells.findIndex((c) => /^jobid$/i.test(c));
    if (id !== -1) {
      columns = { id, name: cells.findIndex((c) => /^(?:job)?name$/i.test(c)), user: cells.findIndex((c) => /^user$/i.test(c)), pipe };
      headerAt = i + 1;
      continue;
    }
    if (!columns) continue;
    const row = columns.pipe ? line.split('|').map((c) => c.trim()) : line.split(/\s+/);
    const job = row[columns.id] ?? '';
    if (STEP.test(job)) continue;
    if (!JOB_ID.test(job)) {
      if (problems.length < MAX_PROBLEMS) problems.push(`line ${i + 1}: "${line.slice(0, 80)}" has no job id in the JOBID column (header at line ${headerAt})`);
      continue;
    }
    const name = columns.name === -1 ? undefined : row[columns.name];
    const user = columns.user === -1 ? undefined : row[columns.user];
    jobs.set(job, { ...(user ? { user: user.slice(0, 256) } : {}), ...(name ? { name: name.slice(0, 256) } : {}) });
  }
  if (!columns) problems.push('no JOBID header and no JobId= record: not squeue, sacct or scontrol show job output');
  return { jobs, problems };
}
