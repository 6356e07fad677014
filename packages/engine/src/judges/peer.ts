import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/** A GPU hotter (or hungrier) than the median of its siblings at similar load on the same host. */
export const peer: Judge<'peer'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const value = gpu[rule.metric];
    if (value === null || gpu.util_pct === null) return;
    const peers = ctx.peers.of(rule, ctx.position);
    if (Number.isNaN(peers)) return; // fewer than two siblings at its load
    const key = ruleKey(rule.id, gpu.index);
    const tracker = host.trackers[key];
    const delta = value - peers;
    const breaching = delta > (tracker?.firing === true ? rule.min_delta - rule.recover_margin : rule.min_delta);
    if (!breaching && !tracker) return;
    observeMetric(ctx, key, rule, breaching, value, fill(rule.summary, { host: host.host, gpu: gpu.index, value, peers, delta }));
  },
};
