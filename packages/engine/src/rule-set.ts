import { AlertCategory, HostFault, IB_PORT_COUNTERS, KernelEventKind, must, Severity, ThrottleReason } from '@gpualert/schema';
import { z } from 'zod';

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `5m`, `4h` → milliseconds. */
export const Duration = z
  .string()
  .regex(DURATION, 'expected a duration like 30s, 5m or 4h')
  .transform((v) => {
    const [, n, unit = ''] = must(DURATION.exec(v), 'the regex above checked it');
    return Number(n) * must(UNIT_MS[unit], 'the regex admits only these units');
  });

/** GPU metrics a rule can read. */
export const NumericMetric = z.enum([
  'util_pct',
  'mem_util_pct',
  'mem_used_mib',
  'temp_c',
  'mem_temp_c',
  'power_w',
  'sm_clock_mhz',
  'mem_clock_mhz',
  'fan_pct',
]);
/** Rule ids one cooling rule may explain. */
export const MAX_EXPLAINED = 32;
/** The most sibling fans a fan rule may ask for. */
const MAX_SIBLINGS = 64;

export const CounterMetric = z.enum(['ecc_sbe_volatile', 'ecc_dbe_volatile', 'ecc_sbe_aggregate', 'ecc_dbe_aggregate', 'nvlink_errors']);

const common = {
  id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'expected lower-case letters, digits and dashes'),
  severity: Severity,
  category: AlertCategory,
  /** How long the condition must hold before the alert fires. */
  for: Duration.default(0),
  summary: z.string().min(1),
  action: z.string().min(1),
  /** Severity rises while the alert keeps firing. */
  escalate: z.array(z.object({ after: Duration, severity: Severity })).default([]),
  enabled: z.boolean().default(true),
};

export const RuleSpec = z.discriminatedUnion('kind', [
  z.object({
    ...common,
    kind: z.literal('threshold'),
    metric: NumericMetric,
    above: z.number(),
    /** Hysteresis: once firing, it resolves only below this. */
    recover_below: z.number().optional(),
  }),
  z.object({
    ...common,
    kind: z.literal('baseline'),
    metric: NumericMetric,
    /** Standard deviations away from this GPU's own normal at comparable load. */
    sigmas: z.number().positive().default(4),
    /** ...and at least this many units away (°C, W): statistically large and physically large. */
    min_delta: z.number().positive(),
    /** Samples this GPU must have contributed before its own normal outweighs the fleet prior. */
    warmup_samples: z.number().int().positive().default(30),
    /** Utilisation (%) below which a sample teaches and is judged against the idle normal. */
    idle_below: z.number().min(0).max(100).default(10),
    /** Utilisation (%) from which a sample teaches and is judged against the busy normal; between the two, neither. */
    busy_at_least: z.number().min(0).max(100).default(50),
  }),
  z.object({
    ...common,
    kind: z.literal('peer'),
    metric: NumericMetric,
    /** Units above the median of the host's other GPUs at similar load. */
    min_delta: z.number().positive(),
    /** Utilisation points within which two GPUs count as at similar load. */
    load_band: z.number().positive().default(25),
    /** Hysteresis: once firing, it resolves only when the delta falls below `min_delta - recover_margin`. */
    recover_margin: z.number().min(0).default(3),
  }),
  z.object({
    ...common,
    kind: z.literal('straggler'),
    /** A host whose mean utilisation is below this fraction of its job's median. */
    fraction: z.number().positive().max(1).default(0.7),
    min_hosts: z.number().int().min(2).default(3),
    /** Weight of the past in each host's smoothed utilisation (the new sample weighs the rest). */
    smoothing: z.number().min(0).max(0.99).default(0.7),
    /** Hosts of the job not heard from within this window are not peers. */
    window: Duration.default(120_000),
    /** The job's median utilisation must be above this (%): a job at rest has no stragglers. */
    peers_busy_above: z.number().min(0).max(100).default(30),
  }),
  z.object({
    ...common,
    kind: z.literal('event'),
    /** Which kernel events: by kind and, for Xid and SXid, code. */
    kinds: z.array(KernelEventKind).min(1),
    xids: z.array(z.number().int()).optional(),
    /** The same code this many times on one GPU within the window means suspect hardware. */
    repeat: z.object({ count: z.number().int().min(2), within: Duration, severity: Severity }).optional(),
    /** An application-level event resolves after this quiet period; hardware waits for recovery. */
    quiet: Duration.default(1_800_000),
  }),
  z.object({
    ...common,
    kind: z.literal('counter'),
    metric: CounterMetric,
    increase: z.number().int().positive().default(1),
    quiet: Duration.default(3_600_000),
    latch: z.boolean().default(false),
  }),
  z.object({ ...common, kind: z.literal('flag'), flag: z.enum(['remap_pending', 'remap_failure']), latch: z.boolean().default(false) }),
  z.object({ ...common, kind: z.literal('throttle'), reasons: z.array(ThrottleReason).min(1) }),
  z.object({ ...common, kind: z.literal('stuck_job'), util_below: z.number().default(5) }),
  z.object({
    ...common,
    kind: z.literal('low_memory_use'),
    mem_below_pct: z.number().default(30),
    /** Only a GPU doing work (utilisation at least this, %) is judged. */
    util_at_least: z.number().min(0).max(100).default(5),
  }),
  z.object({ ...common, kind: z.literal('idle_cost'), util_below: z.number().default(2) }),
  z.object({ ...common, kind: z.literal('absence'), scope: z.enum(['host', 'gpu']), intervals: z.number().int().min(1).default(3) }),
  z.object({ ...common, kind: z.literal('collector'), consecutive: z.number().int().min(1).default(2) }),
  // A host agent's telemetry source gone quiet (its `telemetry.health`): one alert per source; `sources` narrows (default: all).
  z.object({ ...common, kind: z.literal('telemetry'), sources: z.array(z.string().min(1).max(64)).max(32).optional() }),
  z.object({ ...common, kind: z.literal('link'), util_above: z.number().default(50) }),
  z.object({ ...common, kind: z.literal('drift'), min_hosts: z.number().int().min(2).default(3) }),
  z.object({ ...common, kind: z.literal('maintenance') }),
  z.object({
    ...common,
    kind: z.literal('job_fault'),
    /** Fatal GPU faults: these Xid codes, and a GPU fallen off the bus. */
    xids: z.array(z.number().int()).default([48, 63, 64, 74, 79, 94, 95, 119, 120]),
    /** Collective timeouts and NCCL errors of the job's ranks this long after the fault are its fallout. */
    window: Duration.default(2_700_000),
    /** A rank's timeout waits this long for the fault that explains it (the topics arrive in any order). */
    grace: Duration.default(120_000),
  }),
  z.object({
    ...common,
    kind: z.literal('job_checkpoint'),
    /** Overdue after this many times the job's own usual interval between successful checkpoints. */
    overdue_factor: z.number().min(1).default(3),
    /** Successful checkpoints seen before the job's interval is trusted. */
    min_checkpoints: z.number().int().min(2).default(2),
    /** Successful checkpoint reports (its ranks', each saving its shard) within this of the first are one checkpoint. */
    same_within: Duration.default(120_000),
  }),
  z.object({
    ...common,
    kind: z.literal('job_step_time'),
    /** The job's recent step time this many times its own baseline. */
    factor: z.number().min(1).default(1.5),
    /** Step-time reports before the baseline is trusted. */
    warmup_steps: z.number().int().min(1).default(20),
    /** Weight of the past in the recent step time (the new report weighs the rest). */
    smoothing: z.number().min(0).max(0.99).default(0.8),
  }),
  z.object({
    ...common,
    kind: z.literal('job_straggler'),
    /** A rank whose step time is this many times the median of its peers'. */
    factor: z.number().min(1).default(1.3),
    /** Ranks reporting step times needed (the rank included). */
    min_ranks: z.number().int().min(2).default(3),
    /** Ranks not heard from within this window are not peers. */
    window: Duration.default(300_000),
  }),
  z.object({
    ...common,
    kind: z.literal('job_stalled'),
    /** No new step for this long while the job's processes live on the GPUs. */
    stalled_after: Duration.default(900_000),
  }),
  // The host layer (issue 23): its BMC, its kernel's own faults, its PCIe ports, its training network.
  z.object({
    ...common,
    kind: z.literal('fan'),
    /** A fan turning slower than this fraction of its sibling fans' median speed is failing. */
    fraction: z.number().positive().max(1).default(0.5),
    /** Sibling fans (with a speed) a fan needs before it is compared; a fan at 0 rpm or critical health is failed anyway. */
    min_siblings: z.number().int().min(1).max(MAX_SIBLINGS).default(2),
    /** GPU alerts of the host this rule explains while it fires: they join its incident, root cause cooling. */
    explains: z.array(z.string()).max(MAX_EXPLAINED).default([]),
    /** ...and this long after it last breached (GPUs cool down after the fan comes back). */
    explains_for: Duration.default(900_000),
    /** A fan last seen failed that the BMC no longer lists (or lists without a reading) stays failed this long. */
    missing_for: Duration.default(3_600_000),
  }),
  z.object({
    ...common,
    kind: z.literal('psu_redundancy'),
    /** A PSU or group back to healthy resolves only after this long without another failure: one flipping pages. */
    settle: Duration.default(300_000),
  }),
  z.object({
    ...common,
    kind: z.literal('inlet_temp'),
    /** Mean absolute deviations above this host's own normal inlet temperature. */
    sigmas: z.number().positive().default(4),
    /** ...and at least this many °C above it. */
    min_delta: z.number().positive().default(5),
    /** Readings the host must have given before its own normal is trusted. */
    warmup_samples: z.number().int().positive().default(20),
    /** Inlet readings below this °C are a broken sensor: missing, neither learned nor judged. */
    min_celsius: z.number().default(-20),
    /** ...and above this °C. */
    max_celsius: z.number().default(100),
    explains: z.array(z.string()).max(MAX_EXPLAINED).default([]),
    explains_for: Duration.default(900_000),
  }),
  z.object({
    ...common,
    kind: z.literal('bmc_event'),
    /** BMC log entries (SEL, Redfish log services) of at least this severity. */
    min_severity: Severity.default('critical'),
    /** Resolves after this long without another. */
    quiet: Duration.default(3_600_000),
    /** An entry created more than this before it arrives is history (a backlog, a republished log): not judged. */
    max_age: Duration.default(3_600_000),
    /** Entries remembered per host so one delivered again is not judged again. */
    remember: z.number().int().min(1).max(65_536).default(1_024),
    /** Open sensor alerts per host; past them, the rest are one alert with their count. */
    max_alerts: z.number().int().min(1).max(10_000).default(20),
  }),
  z.object({
    ...common,
    kind: z.literal('ib_port'),
    /** `down`: a port seen active is no longer; `degraded`: its rate is below its siblings'; `errors`: error counters rising. */
    check: z.enum(['down', 'degraded', 'errors']),
    /** With degraded: a rate below this fraction of the sibling ports' median rate. */
    rate_fraction: z.number().positive().max(1).default(1),
    /** With errors: the counters watched. */
    counters: z
      .array(z.enum(IB_PORT_COUNTERS))
      .min(1)
      .default(['link_downed', 'link_error_recovery', 'symbol_error', 'port_rcv_errors', 'local_link_integrity_errors']),
    /** With errors: a rise of at least this many between two readings. */
    increase: z.number().int().positive().default(1),
    /** With errors: resolves after this long without a rise. */
    quiet: Duration.default(900_000),
    /** With errors: counter ceilings (4/8/16/32-bit maxima): a counter reaching one, or staying at it while firing, is still erroring. */
    saturate_at: z.array(z.number().int().nonnegative()).max(16).default([15, 255, 65_535, 4_294_967_295]),
  }),
  z.object({
    ...common,
    kind: z.literal('host_fault'),
    /** Which of the kernel's host faults (`host` events' `host_fault`). */
    faults: z.array(HostFault).min(1),
    /** Stays firing until an operator resolves it (a host memory UE: drain). */
    latch: z.boolean().default(false),
    /** Unlatched: resolves after this long without another. */
    quiet: Duration.default(3_600_000),
  }),
  z.object({
    ...common,
    kind: z.literal('pcie_port'),
    /** A PCIe switch or root port's AER error of at least this severity (uncorrected non-fatal: error; fatal: critical). */
    min_severity: Severity.default('error'),
    latch: z.boolean().default(false),
    quiet: Duration.default(1_800_000),
  }),
]);
export type RuleSpec = z.infer<typeof RuleSpec>;
export type RuleOf<K extends RuleSpec['kind']> = Extract<RuleSpec, { kind: K }>;

export const RulesFile = z.object({ rules: z.array(RuleSpec) }).superRefine((file, ctx) => {
  const seen = new Set<string>();
  file.rules.forEach((rule, i) => {
    if (seen.has(rule.id)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'id'], message: `rule "${rule.id}" appears twice` });
    seen.add(rule.id);
  });
});

/** A fleet prior: what a GPU model's metric looks like idle and busy, before a GPU has its own normal. */
export const Prior = z.object({ idle: z.tuple([z.number(), z.number().positive()]), busy: z.tuple([z.number(), z.number().positive()]) });

export const Template = z.object({
  name: z.string().min(1),
  /** Higher wins when several match. */
  priority: z.number().int().default(0),
  /** All given must match: regexes over the inventory's fingerprint and the host's labels. */
  match: z
    .object({
      gpu_model: z.string().optional(),
      provider: z.string().optional(),
      cluster: z.string().optional(),
      role: z.string().optional(),
    })
    .default({}),
  /** Per-rule overrides of numeric settings, and rules switched off. */
  overrides: z.record(z.string(), z.record(z.string(), z.union([z.number(), z.string(), z.boolean()]))).default({}),
  disable: z.array(z.string()).default([]),
  /** Versions this hardware is pinned to; a host on others is drift. */
  pins: z.object({ driver_version: z.string().optional(), cuda_version: z.string().optional() }).default({}),
  priors: z.partialRecord(NumericMetric, Prior).default({}),
});
export type Template = z.infer<typeof Template>;
