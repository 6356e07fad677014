import { withRecent } from '../evidence.ts';
import type { GpuContext } from '../judge.ts';
import type { RuleSpec } from '../rule-set.ts';

/**
 * A per-GPU metric condition observed: callers return early when it is healthy and untracked
 * (the common case, no allocation, no formatting) and call this otherwise.
 */
export function observeMetric(ctx: GpuContext, key: string, rule: RuleSpec, breaching: boolean, value: number | null | undefined, summary: string): void {
  const index = ctx.gpu.index;
  ctx.conditions.observe(ctx.host, key, rule, index, ctx.at, {
    breaching,
    value: value ?? undefined,
    summary,
    evidence: breaching ? withRecent(ctx.evidence, ctx.host, index, ctx.at) : [],
  });
}
