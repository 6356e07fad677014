import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/** A metric above a fixed limit; once firing it resolves only below `recover_below` (hysteresis). */
export const threshold: Judge<'threshold'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const key = ruleKey(rule.id, gpu.index);
    const value = gpu[rule.metric];
    const tracker = host.trackers[key];
    const limit = tracker?.firing === true ? (rule.recover_below ?? rule.above) : rule.above;
    const breaching = value !== null && value > limit;
    if (!breaching && !tracker) return; // healthy and untracked: the common case costs nothing
    observeMetric(ctx, key, rule, breaching, value, fill(rule.summary, { host: host.host, gpu: gpu.index, value: value ?? undefined }));
  },
};
