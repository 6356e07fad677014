import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/** The GPU reports one of the rule's clock-throttle reasons. */
export const throttle: Judge<'throttle'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const key = ruleKey(rule.id, gpu.index);
    const breaching = gpu.throttle !== null && gpu.throttle.some((r) => rule.reasons.includes(r));
    if (!breaching && !host.trackers[key]) return;
    const active = (gpu.throttle ?? []).filter((r) => rule.reasons.includes(r));
    observeMetric(ctx, key, rule, breaching, undefined, fill(rule.summary, { host: host.host, gpu: gpu.index, detail: active.join(', ') }));
  },
};
