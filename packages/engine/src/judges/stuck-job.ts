import { fill } from '../conditions.ts';
import type { GpuContext, Judge } from '../judge.ts';
import { jobOnGpu } from '../job-runs.ts';
import type { BoundTemplate } from '../load-rules.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/**
 * Processes on the GPU, but it does (almost) nothing. A GPU whose job the engine follows (its
 * samples attribute it to a job that reports `job.event`s) is left to the `job_stalled` rule
 * when the template has one: one alert per stalled job, not one per idle GPU.
 */
export const stuckJob: Judge<'stuck_job'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const key = ruleKey(rule.id, gpu.index);
    const breaching = (gpu.processes ?? 0) > 0 && gpu.util_pct !== null && gpu.util_pct < rule.util_below && !deferred(ctx);
    if (!breaching && !host.trackers[key]) return;
    observeMetric(ctx, key, rule, breaching, gpu.util_pct ?? undefined, fill(rule.summary, { host: host.host, gpu: gpu.index }));
  },
};

/** The GPU's job reports events and the template judges stalled jobs: `job_stalled` speaks for it. */
function deferred(ctx: GpuContext): boolean {
  return jobOnGpu(ctx.state, ctx.host, ctx.gpu.index) !== undefined && judgesStalledJobs(ctx.bound);
}

const STALLED = new WeakMap<BoundTemplate, boolean>();

function judgesStalledJobs(bound: BoundTemplate): boolean {
  let has = STALLED.get(bound);
  if (has === undefined) STALLED.set(bound, (has = bound.rules.some((r) => r.kind === 'job_stalled')));
  return has;
}
