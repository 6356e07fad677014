import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { hostKey } from './keys.ts';

/** A paid (provider) instance whose GPUs all sit idle with no processes. */
export const idleCost: Judge<'idle_cost'> = {
  afterGpus(ctx, rule) {
    const { host } = ctx;
    const { gpus } = ctx.sample;
    const key = hostKey(rule.id);
    const paid = host.inventory?.provider !== undefined;
    let processes = 0;
    for (const g of gpus) processes += g.processes ?? 0;
    const idle = gpus.length > 0 && processes === 0 && gpus.every((g) => g.util_pct !== null && g.util_pct < rule.util_below);
    if (!(paid && idle) && !host.trackers[key]) return;
    ctx.conditions.observe(host, key, rule, undefined, ctx.at, {
      breaching: paid && idle,
      summary: fill(rule.summary, { host: host.host }),
      evidence: ctx.evidence,
    });
  },
};
