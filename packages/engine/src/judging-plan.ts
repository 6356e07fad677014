import type {
  BmcEventContext,
  TelemetryContext,
  GpuContext,
  HostSampleContext,
  InventoryContext,
  JobContext,
  Judge,
  JudgeContext,
  KernelContext,
  ProviderContext,
  RuleKind,
  SampleContext,
} from './judge.ts';
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
  readonly job: readonly Step<JobContext>[];
  readonly tick: readonly Step<JudgeContext>[];
  readonly hostSample: readonly Step<HostSampleContext>[];
  readonly bmcEvent: readonly Step<BmcEventContext>[];
  readonly telemetry: readonly Step<TelemetryContext>[];
  readonly clusterChange: readonly Step<JudgeContext>[];
}

const PLANS = new WeakMap<BoundTemplate, JudgingPlan>();

export function planOf(bound: BoundTemplate): JudgingPlan {
  let plan = PLANS.get(bound);
  if (!plan) PLANS.set(bound, (plan = makePlan(bound.rules)));
  return plan;
}

function makePlan(rules: readonly RuleSpec[]): JudgingPlan {
  const plan: { -readonly [H in keyof JudgingPlan]: JudgingPlan[H] extends readonly (infer S)[] ? S[] : never } = {
    beforeGpus: [],
    gpu: [],
    afterGpus: [],
    kernel: [],
    provider: [],
    inventory: [],
    job: [],
    tick: [],
    hostSample: [],
    bmcEvent: [],
    telemetry: [],
    clusterChange: [],
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
    if (judge.job) plan.job.push({ rule, run: judge.job });
    if (judge.tick) plan.tick.push({ rule, run: judge.tick });
    if (judge.hostSample) plan.hostSample.push({ rule, run: judge.hostSample });
    if (judge.bmcEvent) plan.bmcEvent.push({ rule, run: judge.bmcEvent });
    if (judge.telemetry) plan.telemetry.push({ rule, run: judge.telemetry });
    if (judge.clusterChange) plan.clusterChange.push({ rule, run: judge.clusterChange });
  }
  return plan;
}
