import type { XidCatalog } from '@gpualert/rules';
import type { EnvelopeOf, GpuMetrics, KernelEventData } from '@gpualert/schema';
import type { Conditions } from './conditions.ts';
import type { EngineState, GpuState, HostState, JobRun, MaintenanceWindow } from './engine-state.ts';
import type { BoundTemplate } from './load-rules.ts';
import type { SamplePeers } from './peer-medians.ts';
import type { RuleOf, RuleSpec } from './rule-set.ts';

export type RuleKind = RuleSpec['kind'];

/** What every judge is handed: the host, its bound template, where observations go, and the clock. */
export interface JudgeContext {
  readonly state: EngineState;
  readonly host: HostState;
  readonly bound: BoundTemplate;
  readonly conditions: Conditions;
  readonly catalog: XidCatalog;
  /** Event time of what is being judged (the clock). */
  readonly at: number;
}

/** One `gpu.sample` of the host. */
export interface SampleContext extends JudgeContext {
  readonly sample: EnvelopeOf<'gpu.sample'>['data'];
  /** The sample's envelope id: the evidence of anything it shows. */
  readonly evidence: string[];
  /** GPU indexes the sample reported. */
  readonly present: ReadonlySet<number>;
}

/**
 * One GPU of a sample. The engine reuses one such object for every GPU of a sample (the hot path
 * allocates nothing for a healthy GPU), so a judge must not keep it.
 */
export interface GpuContext extends SampleContext {
  gpu: GpuMetrics;
  /** The GPU's position in the sample (for peer medians). */
  position: number;
  gs: GpuState;
  readonly peers: SamplePeers;
}

/** One kernel event, its GPU resolved from the event or its PCI address. */
export interface KernelContext extends JudgeContext {
  readonly id: string;
  readonly event: KernelEventData;
  readonly gpu: number | undefined;
}

/** One provider event; the engine has already stored its window. */
export interface ProviderContext extends JudgeContext {
  readonly data: EnvelopeOf<'provider.event'>['data'];
  readonly window: MaintenanceWindow;
  /** Windows dropped to keep the bound: their alerts end too. */
  readonly forgotten: readonly string[];
  /** The provider moved this window's start or end since its last notice. */
  readonly moved: boolean;
}

/** One `host.sample` (the host's BMC or training network). */
export interface HostSampleContext extends JudgeContext {
  readonly id: string;
  readonly data: EnvelopeOf<'host.sample'>['data'];
}

/** One `telemetry.health` (a host agent's word on each telemetry source). */
export interface TelemetryContext extends JudgeContext {
  readonly id: string;
  readonly data: EnvelopeOf<'telemetry.health'>['data'];
}

/** One `bmc.event` (a new SEL / Redfish log entry). */
export interface BmcEventContext extends JudgeContext {
  readonly id: string;
  readonly data: EnvelopeOf<'bmc.event'>['data'];
}

/** One `job.event` of the host; the engine has already noted it in the job's state (`fleet.training`). */
export interface JobContext extends JudgeContext {
  readonly id: string;
  readonly data: EnvelopeOf<'job.event'>['data'];
  readonly run: JobRun;
}

/** A `host.inventory`; the engine has already stored it and re-bound the template. */
export interface InventoryContext extends JudgeContext {
  readonly data: EnvelopeOf<'host.inventory'>['data'];
}

/**
 * How one rule kind judges. Each hook is called once per rule of the kind in the host's bound
 * template, in the rules' order, and feeds `ctx.conditions`; a hook a kind does not need is left out.
 */
export interface Judge<K extends RuleKind> {
  /** Once per `gpu.sample`, before its GPUs (collector health). */
  beforeGpus?(ctx: SampleContext, rule: RuleOf<K>): void;
  /** Once per GPU of a `gpu.sample`. */
  gpu?(ctx: GpuContext, rule: RuleOf<K>): void;
  /** Once per `gpu.sample`, after its GPUs (host-level: idle cost, stragglers, GPUs missing). */
  afterGpus?(ctx: SampleContext, rule: RuleOf<K>): void;
  /** A kernel event: true when this rule took it (the first rule that does is the only one). */
  kernel?(ctx: KernelContext, rule: RuleOf<K>): boolean;
  provider?(ctx: ProviderContext, rule: RuleOf<K>): void;
  inventory?(ctx: InventoryContext, rule: RuleOf<K>): void;
  /** A `host.sample`: fans, temperatures, PSUs, InfiniBand ports. */
  hostSample?(ctx: HostSampleContext, rule: RuleOf<K>): void;
  /** A `bmc.event`. */
  bmcEvent?(ctx: BmcEventContext, rule: RuleOf<K>): void;
  /** A `telemetry.health`: which of the host's telemetry sources went quiet. */
  telemetry?(ctx: TelemetryContext, rule: RuleOf<K>): void;
  /** A `job.event` (steps, checkpoints, collective timeouts…) of a rank on this host. */
  job?(ctx: JobContext, rule: RuleOf<K>): void;
  /** Time passes for the host (no input): absence. */
  tick?(ctx: JudgeContext, rule: RuleOf<K>): void;
  /**
   * The host's cluster changed under it: other engines' hosts joined, left or changed versions
   * (`fleet-shares.ts`). Judged again from what the host last reported.
   */
  clusterChange?(ctx: JudgeContext, rule: RuleOf<K>): void;
}

/** Every rule kind has a judge: a kind added to `RuleSpec` without one does not compile. */
export type JudgeRegistry = { readonly [K in RuleKind]: Judge<K> };
