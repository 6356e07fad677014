import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { homeJobs, jobProgressWords, restartedSinceFault, runKey } from '../job-runs.ts';

/**
 * A training job's checkpoints: a checkpoint that failed to be written (until the next one is),
 * and a job with no successful checkpoint for `overdue_factor` times its own usual interval (once
 * it has written `min_checkpoints`). The reports of one checkpoint (each rank saving its shard)
 * within `same_within` of the first are one checkpoint: the interval learned is the job's own.
 * Judged on the job's home host (its rank 0's), by its clock.
 */
export const jobCheckpoint: Judge<'job_checkpoint'> = {
  job(ctx, rule) {
    const { data, run, host, at } = ctx;
    if (data.kind !== 'checkpoint') return;
    const key = runKey(run);
    const failedKey = `${rule.id}|failed|${key}`;
    if (data.checkpoint === 'failed') {
      ctx.conditions.observe(host, failedKey, rule, undefined, at, {
        breaching: true,
        evidence: [ctx.id],
        labels: run.labels,
        description: data.message,
        summary: fill(rule.summary, {
          host: host.host,
          job: data.job,
          detail: `failed to write a checkpoint${data.step !== undefined ? ` at step ${data.step}` : ''}`,
          progress: jobProgressWords(run, at),
        }),
      });
      return;
    }
    // A new checkpoint (not a further rank's report of the last one): the job's interval learns from it.
    const c = run.checkpoint;
    if (c && (c.began === undefined || at - c.began >= rule.same_within)) {
      if (c.began !== undefined) {
        const interval = at - c.began;
        c.every = c.every === undefined ? interval : c.every * 0.7 + interval * 0.3;
        c.count += 1;
      } else {
        c.count = Math.max(c.count, 1);
      }
      c.began = at;
    }
    // A checkpoint written: what failed before, and an overdue one, are over.
    if (host.trackers[failedKey]) ctx.conditions.observe(host, failedKey, rule, undefined, at, { breaching: false, summary: '' });
    const overdueKey = `${rule.id}|overdue|${key}`;
    if (host.trackers[overdueKey]) ctx.conditions.observe(host, overdueKey, rule, undefined, at, { breaching: false, summary: '' });
  },

  tick(ctx, rule) {
    const { host, at } = ctx;
    for (const [jobKey, run] of homeJobs(ctx.state, host)) {
      const key = `${rule.id}|overdue|${jobKey}`;
      const job = run.labels.job;
      const c = run.checkpoint;
      const ok = c?.ok;
      const every = c?.every;
      const ready = c !== undefined && ok !== undefined && every !== undefined && c.count >= rule.min_checkpoints && run.exited === undefined;
      const breaching = ready && at - ok > rule.overdue_factor * every;
      if (!breaching && !host.trackers[key]) continue;
      const minutes = ready ? Math.round((at - ok) / 60_000) : undefined;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching,
        value: minutes,
        labels: run.labels,
        ...(run.fault && breaching && !restartedSinceFault(run) ? { incident: run.fault.fingerprint } : {}),
        summary: fill(rule.summary, {
          host: host.host,
          job,
          detail: `has written no checkpoint for ${minutes ?? '?'} min (it usually writes one every ${ready ? Math.round(every / 60_000) : '?'} min)`,
          progress: jobProgressWords(run, at),
        }),
      });
    }
  },
};
