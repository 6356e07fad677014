import { fill } from '../conditions.ts';
import type { JobRun } from '../engine-state.ts';
import type { Judge } from '../judge.ts';
import { homeJobs, jobLivesOn, jobProgressWords, runKey } from '../job-runs.ts';
import { median } from '../peer-medians.ts';

/**
 * A job's step time against its own baseline: the mean of its first `warmup_steps` step-time
 * reports (any rank); the recent time is smoothed. Judged when the job's home host reports.
 */
export const jobStepTime: Judge<'job_step_time'> = {
  job(ctx, rule) {
    const { data, run, host, at } = ctx;
    if (data.kind !== 'step' || data.step_time_ms === undefined) return;
    const ms = data.step_time_ms;
    const baseline = (run.baseline ??= { n: 0, mean: 0 });
    run.recentMs = run.recentMs === undefined ? ms : run.recentMs * rule.smoothing + ms * (1 - rule.smoothing);
    if (baseline.n < rule.warmup_steps) {
      baseline.n += 1;
      baseline.mean += (ms - baseline.mean) / baseline.n;
      return;
    }
    if (run.home !== host.host) return;
    const key = `${rule.id}|${runKey(run)}`;
    const breaching = run.recentMs > rule.factor * baseline.mean;
    if (!breaching && !host.trackers[key]) return;
    ctx.conditions.observe(host, key, rule, undefined, at, {
      breaching,
      value: Math.round(run.recentMs),
      evidence: [ctx.id],
      labels: run.labels,
      summary: fill(rule.summary, {
        host: host.host,
        job: data.job,
        value: Math.round(run.recentMs),
        baseline: Math.round(baseline.mean),
        detail: `steps take ${Math.round(run.recentMs)} ms against its own ${Math.round(baseline.mean)} ms`,
        progress: jobProgressWords(run, at),
      }),
    });
  },
};

/** Per job, the median step time of its ranks heard within the window: made at most once per 10 s of event time, not per report. */
const MEDIANS = new WeakMap<JobRun, { at: number; median: number; count: number }>();
const SCRATCH: number[] = [];

/**
 * A straggler rank: its step time `factor` times the median of the job's ranks (across hosts)
 * heard from within `window`, with at least `min_ranks` reporting. Alerted on the rank's own host
 * and GPU. (A host whose GPUs are less busy than its job's other hosts is the `straggler` kind.)
 */
export const jobStraggler: Judge<'job_straggler'> = {
  job(ctx, rule) {
    const { data, run, host, at } = ctx;
    if (data.kind !== 'step' || data.step_time_ms === undefined || data.rank === undefined) return;
    const rank = run.ranks[String(data.rank)];
    if (rank?.ms === undefined) return;
    let peers = MEDIANS.get(run);
    if (!peers || at - peers.at >= 10_000 || at < peers.at) {
      SCRATCH.length = 0;
      for (const name in run.ranks) {
        const r = run.ranks[name];
        if (r?.ms !== undefined && at - r.at < rule.window) SCRATCH.push(r.ms);
      }
      peers = { at, median: SCRATCH.length > 0 ? median(SCRATCH) : 0, count: SCRATCH.length };
      MEDIANS.set(run, peers);
    }
    const key = `${rule.id}|${runKey(run)}|${data.rank}`;
    const breaching = peers.count >= rule.min_ranks && peers.median > 0 && rank.ms > rule.factor * peers.median;
    if (!breaching && !host.trackers[key]) return;
    ctx.conditions.observe(host, key, rule, rank.gpu, at, {
      breaching,
      value: Math.round(rank.ms),
      evidence: [ctx.id],
      labels: run.labels,
      summary: fill(rule.summary, {
        host: host.host,
        job: data.job,
        gpu: rank.gpu ?? '?',
        value: Math.round(rank.ms),
        peers: Math.round(peers.median),
        detail: `rank ${data.rank} takes ${Math.round(rank.ms)} ms a step against its peers' ${Math.round(peers.median)} ms`,
        progress: jobProgressWords(run, at),
      }),
    });
  },
};

/**
 * A job stalled: no new step for `stalled_after` while its processes still live on its home
 * host's GPUs (the samples attribute them to it) and no rank reported its exit. It replaces the
 * `stuck_job` kind for GPUs attributed to a job (that rule defers to this one): one alert per
 * job, not one per idle GPU. Linked to the job's GPU fault when one explains it.
 */
export const jobStalled: Judge<'job_stalled'> = {
  tick(ctx, rule) {
    const { host, at } = ctx;
    for (const [jobKey, run] of homeJobs(ctx.state, host)) {
      const key = `${rule.id}|${jobKey}`;
      const job = run.labels.job;
      const breaching = run.progressAt !== undefined && run.exited === undefined && at - run.progressAt >= rule.stalled_after && jobLivesOn(host, jobKey);
      if (!breaching && !host.trackers[key]) continue;
      const minutes = run.progressAt !== undefined ? Math.round((at - run.progressAt) / 60_000) : undefined;
      const explained = run.fault !== undefined && run.progressAt !== undefined && run.fault.at >= run.progressAt - 60_000 ? run.fault : undefined;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching,
        value: minutes,
        labels: run.labels,
        ...(explained && breaching ? { incident: explained.fingerprint } : {}),
        summary: fill(rule.summary, {
          host: host.host,
          job,
          detail: `has made no progress for ${minutes ?? '?'} min while its processes live${explained ? ` (GPU ${explained.gpu} on ${explained.host}: ${explained.what})` : ''}`,
          progress: jobProgressWords(run, at),
        }),
      });
    }
  },
};
