import { fill } from '../conditions.ts';
import { withRecent } from '../evidence.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';

/** A counter (ECC, NVLink errors) that went up by at least `increase` since the last sample. */
export const counter: Judge<'counter'> = {
  gpu(ctx, rule) {
    const { gpu, host, gs, at } = ctx;
    const value = gpu[rule.metric];
    if (value === null) return;
    const last = gs.counters[rule.metric];
    gs.counters[rule.metric] = value;
    const delta = last === undefined ? 0 : value - last;
    if (delta < rule.increase) return;
    const key = ruleKey(rule.id, gpu.index);
    ctx.conditions.observe(
      host,
      key,
      rule,
      gpu.index,
      at,
      {
        breaching: true,
        value,
        summary: fill(rule.summary, { host: host.host, gpu: gpu.index, value, delta }),
        evidence: withRecent(ctx.evidence, host, gpu.index, at),
      },
      rule.latch,
    );
    const tracker = host.trackers[key];
    if (tracker && !rule.latch) tracker.quietMs = rule.quiet;
  },
};
