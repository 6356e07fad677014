import { IB_PORT_COUNTERS, MAX_FANS_PER_SAMPLE, MAX_IB_PORTS_PER_SAMPLE, MAX_PCI_DEVICES, PciTreeDevice, Severity } from '@gpualert/schema';
import { z } from 'zod';

/**
 * The persisted engine state's shape (one JSON document per host, one for the fleet), checked on
 * every load: the store may hold what an older or newer gpualert wrote, or what someone edited.
 *
 * Versions: 0 (before issue 22, no `version`, `now` and per-GPU `lastSeen` fields);
 * 1 (`version: 1`, the kernel parser's pending lines in `kernel`).
 */
export const ENGINE_STATE_VERSION = 1;

const finite = z.number().refine(Number.isFinite, 'expected a finite number');
const time = finite;
/**
 * A map keyed by outside data. zod's record passes a `"__proto__"` key over unchecked (JSON.parse
 * keeps it as an own key, and the state's maps keep it as data), so that key's value is checked
 * here first: `{"jobs":{"J":{"__proto__":null}}}` must not load a null where a record is expected.
 */
const record = <T extends z.ZodType>(value: T) =>
  z
    .unknown()
    .check((ctx) => {
      const v = ctx.value;
      if (typeof v !== 'object' || v === null || !Object.hasOwn(v, '__proto__')) return;
      const own: unknown = Object.getOwnPropertyDescriptor(v, '__proto__')?.value;
      const checked = value.safeParse(own);
      if (!checked.success)
        ctx.issues.push({ code: 'custom', message: `__proto__: ${checked.error.issues[0]?.message ?? 'does not check'}`, input: own, path: ['__proto__'] });
    })
    .pipe(z.record(z.string(), value));

export const BaselineSchema = z.object({ n: finite, mean: finite, dev: finite });

export const GpuStateSchema = z.object({
  missing: finite,
  baselines: record(BaselineSchema),
  counters: record(finite),
  recent: z.array(z.tuple([z.string(), time])).max(1_000),
  xids: record(z.array(time).max(1_000)),
  job: record(z.string().max(256)).optional(),
});

export const TrackerSchema = z.object({
  rule: z.string(),
  category: z.string(),
  gpu: finite.optional(),
  since: time.optional(),
  firing: z.boolean(),
  told: z.enum(['firing', 'resolved', 'none']),
  startsAt: time.optional(),
  severity: Severity,
  baseSeverity: Severity,
  lastBreach: time,
  latched: z.boolean(),
  transitions: z.array(time),
  flapping: z.boolean(),
  evidence: z.array(z.string()),
  value: finite.optional(),
  summary: z.string(),
  description: z.string().optional(),
  action: z.string(),
  quietMs: finite.optional(),
  rootCause: z.string().max(64).optional(),
  incident: z.string().max(64).optional(),
  labels: record(z.string().max(256)).optional(),
});

export const MaintenanceWindowSchema = z.object({
  status: z.enum(['scheduled', 'started', 'completed', 'cancelled']),
  start: time.optional(),
  end: time.optional(),
  description: z.string(),
});

/** A host's state; its per-entry maps (GPUs, trackers, windows) are checked entry by entry. */
export const HostStateSchema = z.object({
  version: z.literal(ENGINE_STATE_VERSION),
  host: z.string(),
  labels: record(z.string()),
  inventory: z
    .object({
      gpu_model: z.string(),
      driver: z.string(),
      cuda: z.string(),
      provider: z.string().optional(),
      buses: record(finite),
      indexes: z.array(finite),
      at: time,
    })
    .optional(),
  template: z.string(),
  buses: record(finite).optional(),
  lastSample: time.optional(),
  intervalMs: finite,
  collectorErrors: finite,
  gpus: record(z.unknown()),
  trackers: record(z.unknown()),
  maintenance: record(z.unknown()),
  incident: z.object({ fingerprint: z.string(), until: time }).optional(),
  lastTick: time,
  offsets: record(finite),
  kernel: z.object({ next: finite, lines: z.array(z.tuple([finite, z.string(), time])) }).optional(),
  hostLayer: z
    .object({
      inlet: BaselineSchema.optional(),
      ib: z
        .record(z.string(), z.object({ active: z.boolean(), counters: z.partialRecord(z.enum(IB_PORT_COUNTERS), finite), best_rate: finite.optional() }))
        .refine((ports) => Object.keys(ports).length <= MAX_IB_PORTS_PER_SAMPLE, `at most ${MAX_IB_PORTS_PER_SAMPLE} ports`)
        .optional(),
      bmcSeen: z.array(z.string().max(1_024)).max(65_536).optional(),
      failedFans: z
        .record(z.string(), time)
        .refine((fans) => Object.keys(fans).length <= MAX_FANS_PER_SAMPLE, `at most ${MAX_FANS_PER_SAMPLE} fans`)
        .optional(),
    })
    .optional(),
  cooling: z.object({ incident: z.string(), until: time, explains: z.array(z.string()).max(32) }).optional(),
  pci: z.array(PciTreeDevice).max(MAX_PCI_DEVICES).optional(),
  jobs: z.array(z.string()).max(64).optional(),
});

export const FleetStateSchema = z.object({
  jobs: record(record(z.object({ util: finite, at: time }))),
  clusters: record(record(z.object({ driver: z.string(), cuda: z.string() }))),
  training: record(z.unknown()).optional(),
});

/** One training job's state (`JobRun`): checked entry by entry, so one bad job is dropped, not the fleet. */
export const JobRunSchema = z.object({
  labels: record(z.string().max(256)),
  heard: time,
  home: z.string(),
  step: finite.optional(),
  progressAt: time.optional(),
  baseline: z.object({ n: finite, mean: finite }).optional(),
  recentMs: finite.optional(),
  ranks: record(z.object({ host: z.string(), gpu: finite.optional(), step: finite.optional(), at: time, ms: finite.optional() })),
  checkpoint: z
    .object({ ok: time.optional(), step: finite.optional(), count: finite, every: finite.optional(), failed: time.optional(), began: time.optional() })
    .optional(),
  fault: z.object({ host: z.string(), gpu: finite, at: time, fingerprint: z.string(), what: z.string() }).optional(),
  exited: time.optional(),
  restarted: time.optional(),
});
