import type { JobAttribution, JobEventData } from '@gpualert/schema';
import { dict, type EngineState, type GpuState, type HostState, type JobRank, type JobRun } from './engine-state.ts';

/** Training jobs the engine follows at once; past it, the one heard from least recently is forgotten. */
export const MAX_TRAINING_JOBS = 1_024;
/** Ranks one job keeps; past it, the one heard from least recently is forgotten. */
export const MAX_RANKS_PER_JOB = 4_096;
/** Jobs one host is the home of. */
export const MAX_HOME_JOBS = 64;
/** Two successful checkpoints closer than this are one checkpoint told by several ranks. */
const SAME_CHECKPOINT_MS = 10_000;

/** The attribution fields an alert on the GPU carries as labels (so a route can send a job's alerts to its owner). */
const LABELS = ['job', 'job_user', 'namespace', 'pod'] as const satisfies readonly (keyof JobAttribution)[];

/**
 * A GPU's attribution from its sample, kept in its state when it changes (the hot path compares
 * four strings and allocates nothing while it stays the same); its job's run learns its owner.
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
  const run = labels.job !== undefined ? state.fleet.training?.[labels.job] : undefined;
  if (run) for (const name in labels) run.labels[name] = labels[name]!;
}

/** The job of a `job.event` after the event is noted: ranks, progress, checkpoints, exit. */
export function noteJobEvent(state: EngineState, host: HostState, data: JobEventData, at: number): JobRun {
  const training = (state.fleet.training ??= dict());
  let run = training[data.job];
  if (!run) {
    forgetStalest(training, MAX_TRAINING_JOBS - 1, (r) => r.heard);
    run = { labels: dict(), heard: at, home: host.host, ranks: dict() };
    run.labels.job = data.job;
    training[data.job] = run;
    makeHome(host, data.job);
  }
  run.heard = Math.max(run.heard, at);
  // The owner, from a sample that attributed one of this host's GPUs to the job.
  if (run.labels.job_user === undefined) {
    for (const index in host.gpus) {
      const labels = host.gpus[index]!.job;
      if (labels?.job === data.job) for (const name in labels) run.labels[name] = labels[name]!;
    }
  }
  if (data.rank !== undefined) {
    const key = String(data.rank);
    let rank: JobRank | undefined = run.ranks[key];
    if (!rank) {
      forgetStalest(run.ranks, MAX_RANKS_PER_JOB - 1, (r) => r.at);
      run.ranks[key] = rank = { host: host.host, at };
    }
    rank.host = host.host;
    rank.at = Math.max(rank.at, at);
    if (data.gpu !== undefined) rank.gpu = data.gpu;
    if (data.step !== undefined) rank.step = Math.max(rank.step ?? 0, data.step);
    if (data.kind === 'step' && data.step_time_ms !== undefined) rank.ms = rank.ms === undefined ? data.step_time_ms : rank.ms * 0.5 + data.step_time_ms * 0.5;
    if (data.rank === 0 && run.home !== host.host) {
      run.home = host.host;
      makeHome(host, data.job);
    }
  }
  switch (data.kind) {
    case 'step':
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
      if (c.ok !== undefined && at - c.ok >= SAME_CHECKPOINT_MS) {
        const interval = at - c.ok;
        c.every = c.every === undefined ? interval : c.every * 0.7 + interval * 0.3;
        c.count += 1;
      } else if (c.ok === undefined) {
        c.count = 1;
      }
      if (c.ok === undefined || at >= c.ok) c.ok = at;
      const step = data.step ?? run.step;
      if (step !== undefined) c.step = step;
      break;
    }
    case 'restart':
      delete run.exited;
      run.progressAt = at;
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

/** The jobs this host is home of, those it no longer is (or that were forgotten) dropped from its list. */
export function homeJobs(state: EngineState, host: HostState): readonly [string, JobRun][] {
  const names = host.jobs;
  if (names === undefined || names.length === 0) return NONE;
  const out: [string, JobRun][] = [];
  let stale = false;
  for (const name of names) {
    const run = state.fleet.training?.[name];
    if (run && run.home === host.host) out.push([name, run]);
    else stale = true;
  }
  if (stale) host.jobs = out.map(([name]) => name);
  return out;
}

/** The job running on a host's GPU, from the GPU's attribution. */
export function jobOnGpu(state: EngineState, host: HostState, gpu: number): [string, JobRun] | undefined {
  const job = host.gpus[gpu]?.job?.job;
  const run = job !== undefined ? state.fleet.training?.[job] : undefined;
  return run && job !== undefined ? [job, run] : undefined;
}

/** Does any GPU of the host run the job now (its processes live, per the last sample)? */
export function jobLivesOn(host: HostState, job: string): boolean {
  for (const index in host.gpus) if (host.gpus[index]!.job?.job === job) return true;
  return false;
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

function makeHome(host: HostState, job: string): void {
  const jobs = (host.jobs ??= []);
  if (jobs.includes(job)) return;
  jobs.push(job);
  if (jobs.length > MAX_HOME_JOBS) jobs.splice(0, jobs.length - MAX_HOME_JOBS);
}

/** Forgets the entries heard from least recently until at most `keep` are left. */
function forgetStalest<T>(record: Record<string, T>, keep: number, heard: (v: T) => number): void {
  const names = Object.keys(record);
  if (names.length <= keep) return;
  names.sort((a, b) => heard(record[a]!) - heard(record[b]!));
  for (const name of names.slice(0, names.length - keep)) delete record[name];
}

function hasAny(record: Record<string, string>): boolean {
  for (const _ in record) return true;
  return false;
}

const NONE: readonly [string, JobRun][] = [];
