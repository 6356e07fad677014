import type { JobAttribution, JobEventData } from '@gpualert/schema';
import { dict, type EngineState, type GpuState, type HostState, type JobRank, type JobRun } from './engine-state.ts';

/** Training jobs the engine follows at once; past it, the one heard from least recently is forgotten. */
export const MAX_TRAINING_JOBS = 1_024;
/** Ranks one job keeps; past it, the one heard from least recently is forgotten. */
export const MAX_RANKS_PER_JOB = 4_096;
/** Jobs one host is the home of. */
export const MAX_HOME_JOBS = 64;
/** The share of a full bound's entries (the stalest) forgotten at once to make room. */
const FORGET_AT_ONCE = 0.1;
/** Between a job key's parts: a control character, which no job text holds. */
const SEP = '\u001f';

/** The attribution fields an alert on the GPU carries as labels (so a route can send a job's alerts to its owner). */
const LABELS = ['job', 'job_user', 'namespace', 'pod'] as const satisfies readonly (keyof JobAttribution)[];

/**
 * A GPU's attribution from its sample, kept in its state when it changes (the hot path compares
 * four strings and allocates nothing while it stays the same). A job's events learn their owner
 * from it (`noteJobEvent`): the run is keyed by the job's id and owner, never by the id alone.
 */
export function noteGpuJob(state: EngineState, gs: GpuState, attribution: JobAttribution | undefined): void {
  const known = gs.job;
  if (attribution === undefined) {
    if (known !== undefined) delete gs.job;
    return;
  }
  if (known !== undefined && LABELS.every((name) => known[name] === attribution[name])) return;
  const labels = dict<string>();
  for (const name of LABELS) if (attribution[name] !== undefined) labels[name] = attribution[name];
  if (!hasAny(labels)) {
    delete gs.job;
    return;
  }
  gs.job = labels;
}

/** The job of a `job.event` after the event is noted: ranks, progress, checkpoints, exit. */
export function noteJobEvent(state: EngineState, host: HostState, data: JobEventData, at: number): JobRun {
  const training = (state.fleet.training ??= dict());
  const key = eventJobKey(state, training, host, data);
  let run = training[key];
  if (!run) {
    makeRoom(
      training,
      MAX_TRAINING_JOBS,
      (r) => r.heard,
      (name) => unindex(training, name),
    );
    run = { labels: dict(), heard: at, home: host.host, ranks: dict() };
    const owner = ownerOn(host, data);
    if (owner) Object.assign(run.labels, owner);
    run.labels.job = data.job;
    if (host.labels.cluster !== undefined) run.labels.cluster = host.labels.cluster;
    training[key] = run;
    index(training, data.job, key);
    makeHome(host, key);
  }
  run.heard = Math.max(run.heard, at);
  if (data.rank !== undefined) {
    const rankKey = String(data.rank);
    let rank: JobRank | undefined = run.ranks[rankKey];
    if (!rank) {
      makeRoom(run.ranks, MAX_RANKS_PER_JOB, (r) => r.at);
      run.ranks[rankKey] = rank = { host: host.host, at };
    }
    const fresh = at >= rank.at; // not an older report come late
    rank.host = host.host;
    rank.at = Math.max(rank.at, at);
    if (data.gpu !== undefined) rank.gpu = data.gpu;
    // A rank's step going back is the job restarted (from its checkpoint): its progress counts from there.
    if (data.kind === 'step' && data.step !== undefined && fresh) {
      if (rank.step !== undefined && data.step < rank.step) restarted(run, at, data.step);
      rank.step = data.step;
    }
    if (data.kind === 'step' && data.step_time_ms !== undefined) rank.ms = rank.ms === undefined ? data.step_time_ms : rank.ms * 0.5 + data.step_time_ms * 0.5;
    if (data.rank === 0 && run.home !== host.host) {
      run.home = host.host;
      makeHome(host, key);
    }
  }
  switch (data.kind) {
    case 'step':
      if (data.rank === undefined && data.step !== undefined && run.step !== undefined && data.step < run.step) restarted(run, at, data.step);
      if (data.step !== undefined && (run.step === undefined || data.step > run.step)) {
        run.step = data.step;
        run.progressAt = at;
      } else if (data.step === undefined) {
        run.progressAt = at;
      }
      if (run.exited !== undefined && at > run.exited) delete run.exited;
      break;
    case 'checkpoint': {
      const c = (run.checkpoint ??= { count: 0 });
      if (data.checkpoint === 'failed') {
        c.failed = at;
        break;
      }
      if (c.ok === undefined || at >= c.ok) c.ok = at;
      const step = data.step ?? run.step;
      if (step !== undefined) c.step = step;
      break;
    }
    case 'restart':
      delete run.exited;
      restarted(run, at, data.step);
      break;
    case 'exit':
      run.exited = at;
      break;
    case 'collective_timeout':
    case 'nccl_error':
    case 'cuda_error':
    case 'oom':
      break;
  }
  return run;
}

/** The jobs (their keys and runs) this host is home of, those it no longer is (or that were forgotten) dropped from its list. */
export function homeJobs(state: EngineState, host: HostState): readonly [string, JobRun][] {
  const keys = host.jobs;
  if (keys === undefined || keys.length === 0) return NONE;
  const out: [string, JobRun][] = [];
  let stale = false;
  for (const key of keys) {
    const run = state.fleet.training?.[key];
    if (run && run.home === host.host) out.push([key, run]);
    else stale = true;
  }
  if (stale) host.jobs = out.map(([key]) => key);
  return out;
}

/** The job running on a host's GPU (its key and run), from the GPU's attribution: the same id of another owner is another job. */
export function jobOnGpu(state: EngineState, host: HostState, gpu: number): [string, JobRun] | undefined {
  const labels = host.gpus[gpu]?.job;
  if (labels?.job === undefined) return undefined;
  const key = keyOfLabels(labels, labels.job, host.labels.cluster);
  const run = state.fleet.training?.[key];
  return run ? [key, run] : undefined;
}

/** Does any GPU of the host run the job (by its key: id and owner) now, its processes live per the last sample? */
export function jobLivesOn(host: HostState, key: string): boolean {
  for (const index in host.gpus) {
    const labels = host.gpus[index]?.job;
    if (labels?.job !== undefined && keyOfLabels(labels, labels.job, host.labels.cluster) === key) return true;
  }
  return false;
}

/**
 * A job's key in `fleet.training`: its id, with its cluster (the host's `cluster` label), namespace
 * and user when any is known. The same id in another cluster, namespace or user's hands is another
 * job: never linked, never labelled with the other's owner. The separator is a control character,
 * which no job text holds (`JobText`), so no id can pose as another job's key.
 */
export function jobKey(job: string, cluster: string | undefined, namespace: string | undefined, user: string | undefined): string {
  if (cluster === undefined && namespace === undefined && user === undefined) return job;
  return `${job}${SEP}${cluster ?? ''}${SEP}${namespace ?? ''}${SEP}${user ?? ''}`;
}

/** The job's key from its run's labels (they hold its id, cluster, namespace and user). */
export function runKey(run: JobRun): string {
  return keyOfLabels(run.labels, run.labels.job ?? '', run.labels.cluster);
}

/**
 * The fault that took the job down, while it still explains what happens at `at`: within
 * `window` after it (`grace` before), and not after the job restarted since it (a restart ends it).
 */
export function faultAt(run: JobRun, at: number, window: number, grace = 0): NonNullable<JobRun['fault']> | undefined {
  const fault = run.fault;
  if (!fault || at < fault.at - grace || at - fault.at > window) return undefined;
  if (run.restarted !== undefined && run.restarted > fault.at && at >= run.restarted) return undefined;
  return fault;
}

/** Has the job restarted since its fault (which then explains nothing more)? */
export function restartedSinceFault(run: JobRun): boolean {
  return run.fault !== undefined && run.restarted !== undefined && run.restarted > run.fault.at;
}

/** Minutes since the job's last successful checkpoint at `at`, and the step it saved (the work at risk). */
export function workAtRisk(run: JobRun, at: number): { minutes: number | undefined; savedStep: number | undefined } {
  const ok = run.checkpoint?.ok;
  return { minutes: ok !== undefined ? Math.max(0, Math.round((at - ok) / 60_000)) : undefined, savedStep: run.checkpoint?.step };
}

/** "at step 1,200; 11 min since the last checkpoint (step 1,000)": the words every job alert uses. */
export function jobProgressWords(run: JobRun, at: number): string {
  const { minutes, savedStep } = workAtRisk(run, at);
  const step = run.step !== undefined ? `at step ${run.step}` : 'at an unknown step';
  if (minutes === undefined) return `${step}; no successful checkpoint seen: all its work is at risk`;
  return `${step}; ${minutes} min of work since its last checkpoint${savedStep !== undefined ? ` (step ${savedStep})` : ''} at risk`;
}

function makeHome(host: HostState, key: string): void {
  const jobs = (host.jobs ??= []);
  if (jobs.includes(key)) return;
  jobs.push(key);
  if (jobs.length > MAX_HOME_JOBS) jobs.splice(0, jobs.length - MAX_HOME_JOBS);
}

/** The job restarted at `at` (a restart event, or a step going back): its progress counts from `step`, its fault is over. */
function restarted(run: JobRun, at: number, step: number | undefined): void {
  if (step === undefined) delete run.step;
  else run.step = step;
  run.progressAt = at;
  run.restarted = Math.max(run.restarted ?? at, at);
}

/** A GPU's attribution to the event's job on this host that names an owner (the event's GPU first). */
function ownerOn(host: HostState, data: JobEventData): Record<string, string> | undefined {
  const named = data.gpu !== undefined ? host.gpus[data.gpu]?.job : undefined;
  if (named?.job === data.job && hasOwner(named)) return named;
  for (const index in host.gpus) {
    const labels = host.gpus[index]?.job;
    if (labels?.job === data.job && hasOwner(labels)) return labels;
  }
  return undefined;
}

/**
 * The key of the job a `job.event` belongs to: from the host's GPU attributed to it (its owner);
 * with none (the processes gone, no attribution), the run of that id this host (or this rank)
 * already feeds; else the id's run with no owner known, which the owner adopts once known.
 */
function eventJobKey(state: EngineState, training: Record<string, JobRun>, host: HostState, data: JobEventData): string {
  const cluster = host.labels.cluster;
  const ownerless = jobKey(data.job, cluster, undefined, undefined);
  const owner = ownerOn(host, data);
  if (owner) {
    const key = keyOfLabels(owner, data.job, cluster);
    // Its events before the owner (or the host's cluster) was known: the same job, now with its owner.
    const before = training[ownerless] !== undefined ? ownerless : data.job;
    const orphan = training[before];
    if (training[key] === undefined && orphan !== undefined && !hasOwner(orphan.labels)) {
      delete training[before];
      unindex(training, before);
      for (const name of LABELS) if (owner[name] !== undefined) orphan.labels[name] = owner[name];
      if (cluster !== undefined) orphan.labels.cluster = cluster;
      training[key] = orphan;
      index(training, data.job, key);
      const home = state.hosts[orphan.home];
      if (home) makeHome(home, key);
    }
    return key;
  }
  const keys = indexOf(training).get(data.job);
  if (keys) {
    for (const key of keys) {
      const run = training[key];
      if (key === ownerless || !run || run.labels.cluster !== cluster) continue;
      if ((data.rank !== undefined && run.ranks[String(data.rank)]?.host === host.host) || run.home === host.host) return key;
    }
  }
  return ownerless;
}

function keyOfLabels(labels: Readonly<Record<string, string>>, job: string, cluster: string | undefined): string {
  return jobKey(job, cluster, labels.namespace, labels.job_user);
}

function hasOwner(labels: Readonly<Record<string, string>>): boolean {
  return labels.job_user !== undefined || labels.namespace !== undefined;
}

/** Per `fleet.training` record: job id → the keys of its runs (made from the record once, after a load). */
const INDEXES = new WeakMap<Record<string, JobRun>, Map<string, Set<string>>>();

function indexOf(training: Record<string, JobRun>): Map<string, Set<string>> {
  let made = INDEXES.get(training);
  if (!made) {
    made = new Map();
    INDEXES.set(training, made);
    for (const key in training) {
      const job = jobOfKey(key);
      const keys = made.get(job);
      if (keys) keys.add(key);
      else made.set(job, new Set([key]));
    }
  }
  return made;
}

function index(training: Record<string, JobRun>, job: string, key: string): void {
  const made = indexOf(training);
  const keys = made.get(job);
  if (keys) keys.add(key);
  else made.set(job, new Set([key]));
}

function unindex(training: Record<string, JobRun>, key: string): void {
  const made = indexOf(training);
  const job = jobOfKey(key);
  const keys = made.get(job);
  keys?.delete(key);
  if (keys?.size === 0) made.delete(job);
}

/** Entries per bounded record, counted as they are added (counted once after a load). */
const SIZES = new WeakMap<object, number>();

/**
 * Room for one new entry in a record bounded to `bound`: when full, the stalest tenth (by `heard`)
 * are forgotten at once, one sort for a tenth of the bound's additions: O(log n) per entry
 * amortized, not a sort of all of them per entry (1e5 ranks of one job took 12k → 1.3k events/s).
 */
function makeRoom<T>(record: Record<string, T>, bound: number, heard: (v: T) => number, forgot?: (name: string) => void): void {
  let size = SIZES.get(record);
  if (size === undefined) {
    size = 0;
    for (const _ in record) size += 1;
  }
  if (size >= bound) {
    const names = Object.entries(record)
      .sort(([, a], [, b]) => heard(a) - heard(b))
      .map(([name]) => name);
    const drop = names.length - Math.floor(bound * (1 - FORGET_AT_ONCE));
    for (const name of names.slice(0, drop)) {
      delete record[name];
      forgot?.(name);
    }
    size = names.length - drop;
  }
  SIZES.set(record, size + 1);
}

/** The job id a training key starts with (what `split(SEP, 1)[0]` gives). */
function jobOfKey(key: string): string {
  const end = key.indexOf(SEP);
  return end === -1 ? key : key.slice(0, end);
}

function hasAny(record: Record<string, string>): boolean {
  for (const _ in record) return true;
  return false;
}

const NONE: readonly [string, JobRun][] = [];
