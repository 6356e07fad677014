import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/** Processes on the GPU, but it does (almost) nothing. */
export const stuckJob: Judge<'stuck_job'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const key = ruleKey(rule.id, gpu.index);
    const breaching = (gpu.processes ?? 0) > 0 && gpu.util_pct !== null && gpu.util_pct < rule.util_below;
    if (!breaching && !host.trackers[key]) return;
    observeMetric(ctx, key, rule, breaching, gpu.util_pct ?? undefined, fill(rule.summary, { host: host.host, gpu: gpu.index }));
  },
};
