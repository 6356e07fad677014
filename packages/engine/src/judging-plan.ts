import type { GpuContext, InventoryContext, Judge, JudgeContext, KernelContext, ProviderContext, RuleKind, SampleContext } from './judge.ts';
import { JUDGES } from './judges/index.ts';
import type { BoundTemplate } from './load-rules.ts';
import type { RuleSpec } from './rule-set.ts';

export interface Step<C, R = void> {
  readonly rule: RuleSpec;
  readonly run: (ctx: C, rule: RuleSpec) => R;
}

/** A bound template's rules sorted by the hook their judges have, in the rules' order: made once per template. */
export interface JudgingPlan {
  readonly beforeGpus: readonly Step<SampleContext>[];
  readonly gpu: readonly Step<GpuContext>[];
  readonly afterGpus: readonly Step<SampleContext>[];
  readonly kernel: readonly Step<KernelContext, boolean>[];
  readonly provider: readonly Step<ProviderContext>[];
  readonly inventory: readonly Step<InventoryContext>[];
  readonly tick: readonly Step<JudgeContext>[];
}

const PLANS = new WeakMap<BoundTemplate, JudgingPlan>();

export function planOf(bound: BoundTemplate): JudgingPlan {
  let plan = PLANS.get(bound);
  if (!plan) PLANS.set(bound, (plan = makePlan(bound.rules)));
  return plan;
}

function makePlan(rules: readonly RuleSpec[]): JudgingPlan {
  const plan = { beforeGpus: [], gpu: [], afterGpus: [], kernel: [], provider: [], inventory: [], tick: [] } as {
    -readonly [H in keyof JudgingPlan]: JudgingPlan[H] extends readonly (infer S)[] ? S[] : never;
  };
  for (const rule of rules) {
    // The registry is keyed by kind, so the judge found takes exactly this rule's type.
    const judge = JUDGES[rule.kind] as Judge<RuleKind>;
    if (judge.beforeGpus) plan.beforeGpus.push({ rule, run: judge.beforeGpus });
    if (judge.gpu) plan.gpu.push({ rule, run: judge.gpu });
    if (judge.afterGpus) plan.afterGpus.push({ rule, run: judge.afterGpus });
    if (judge.kernel) plan.kernel.push({ rule, run: judge.kernel });
    if (judge.provider) plan.provider.push({ rule, run: judge.provider });
    if (judge.inventory) plan.inventory.push({ rule, run: judge.inventory });
    if (judge.tick) plan.tick.push({ rule, run: judge.tick });
  }
  return plan;
}
