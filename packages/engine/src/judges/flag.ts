import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';

/** A boolean the driver raises (row remap pending or failed). */
export const flag: Judge<'flag'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const value = gpu[rule.flag];
    if (value === null) return;
    const key = ruleKey(rule.id, gpu.index);
    const tracker = host.trackers[key];
    if (!value && (!tracker || tracker.latched)) return; // nothing to say, or latched until recovery after a reset
    ctx.conditions.observe(
      host,
      key,
      rule,
      gpu.index,
      ctx.at,
      { breaching: value, summary: fill(rule.summary, { host: host.host, gpu: gpu.index }), evidence: ctx.evidence },
      rule.latch,
    );
  },
};
