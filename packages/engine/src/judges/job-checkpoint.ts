import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { homeJobs, jobProgressWords } from '../job-runs.ts';

/**
 * A training job's checkpoints: a checkpoint that failed to be written (until the next one is),
 * and a job with no successful checkpoint for `overdue_factor` times its own usual interval (once
 * it has written `min_checkpoints`). Judged on the job's home host (its rank 0's), by its clock.
 */
export const jobCheckpoint: Judge<'job_checkpoint'> = {
  job(ctx, rule) {
    const { data, run, host, at } = ctx;
    if (data.kind !== 'checkpoint') return;
    const failedKey = `${rule.id}|failed|${data.job}`;
    if (data.checkpoint === 'failed') {
      ctx.conditions.observe(host, failedKey, rule, undefined, at, {
        breaching: true, evidence: [ctx.id], labels: run.labels, description: data.message,
        summary: fill(rule.summary, { host: host.host, job: data.job, detail: `failed to write a checkpoint${data.step !== undefined ? ` at step ${data.step}` : ''}`, progress: jobProgressWords(run, at) }),
      });
      return;
    }
    // A checkpoint written: what failed before, and an overdue one, are over.
    if (host.trackers[failedKey]) ctx.conditions.observe(host, failedKey, rule, undefined, at, { breaching: false, summary: '' });
    const overdueKey = `${rule.id}|overdue|${data.job}`;
    if (host.trackers[overdueKey]) ctx.conditions.observe(host, overdueKey, rule, undefined, at, { breaching: false, summary: '' });
  },

  tick(ctx, rule) {
    const { host, at } = ctx;
    for (const [job, run] of homeJobs(ctx.state, host)) {
      const key = `${rule.id}|overdue|${job}`;
      const c = run.checkpoint;
      const ready = c?.ok !== undefined && c.every !== undefined && c.count >= rule.min_checkpoints && run.exited === undefined;
      const breaching = ready && at - c.ok! > rule.overdue_factor * c.every!;
      if (!breaching && !host.trackers[key]) continue;
      const minutes = ready ? Math.round((at - c.ok!) / 60_000) : undefined;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching, value: minutes, labels: run.labels,
        ...(run.fault && breaching ? { incident: run.fault.fingerprint } : {}),
        summary: fill(rule.summary, {
          host: host.host, job,
          detail: `has written no checkpoint for ${minutes ?? '?'} min (it usually writes one every ${ready ? Math.round(c.every! / 60_000) : '?'} min)`,
          progress: jobProgressWords(run, at),
        }),
      });
    }
  },
};
