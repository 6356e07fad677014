import { inertRecord, toInertRecord, type PciTreeDevice, type Severity } from '@gpualert/schema';
import {
  ENGINE_STATE_VERSION,
  FleetStateSchema,
  GpuStateSchema,
  HostStateSchema,
  JobRunSchema,
  MaintenanceWindowSchema,
  TrackerSchema,
} from './engine-state-schema.ts';

/** A GPU's own normal for one metric at one load level, learned online. */
export interface Baseline {
  n: number;
  mean: number;
  /** Mean absolute deviation: robust enough, and cheap. */
  dev: number;
}

export interface GpuState {
  /** Consecutive samples of the host this GPU was missing from. */
  missing: number;
  baselines: Record<string, Baseline>;
  counters: Record<string, number>;
  /** Recent kernel events on this GPU (ids and times), to attach as evidence. */
  recent: [string, number][];
  /** Times of each Xid code on this GPU, for repeat escalation. */
  xids: Record<string, number[]>;
  /** Who runs on it, per the last sample that named a job (`job`, `job_user`, `namespace`, `pod`): its alerts carry them. */
  job?: Record<string, string>;
}

/** What the engine remembers of one alert condition. */
export interface Tracker {
  rule: string;
  category: string;
  gpu?: number;
  /** When the condition started to hold (for `for`). */
  since?: number;
  firing: boolean;
  /** What the outside world was last told: the underlying state may differ while flapping. */
  told: 'firing' | 'resolved' | 'none';
  startsAt?: number;
  severity: Severity;
  baseSeverity: Severity;
  lastBreach: number;
  latched: boolean;
  transitions: number[];
  flapping: boolean;
  evidence: string[];
  value?: number;
  summary: string;
  description?: string;
  action: string;
  /** For application-level events: resolve after this much quiet. */
  quietMs?: number;
  /** What this alert is the root cause of (`cooling`: the host's fans or inlet), said on its alerts. */
  rootCause?: string;
  /** The incident this alert belongs to whatever the host's own (a job's rank linked to the GPU fault that caused it). */
  incident?: string;
  /** Labels its alerts carry besides the host's (a job's: `job`, `job_user`…). */
  labels?: Record<string, string>;
}

export interface MaintenanceWindow {
  status: 'scheduled' | 'started' | 'completed' | 'cancelled';
  start?: number;
  end?: number;
  description: string;
}

export interface HostState {
  /** The persisted shape's version (`ENGINE_STATE_VERSION`). */
  version: number;
  host: string;
  labels: Record<string, string>;
  inventory?: {
    gpu_model: string;
    driver: string;
    cuda: string;
    provider?: string;
    /** GPU index by canonical PCI address. */
    buses: Record<string, number>;
    indexes: number[];
    at: number;
  };
  template: string;
  /** GPU index by PCI address as the samples report it. */
  buses?: Record<string, number>;
  lastSample?: number;
  /** Typical time between samples, learned. */
  intervalMs: number;
  collectorErrors: number;
  gpus: Record<string, GpuState>;
  trackers: Record<string, Tracker>;
  maintenance: Record<string, MaintenanceWindow>;
  incident?: { fingerprint: string; until: number };
  /** When this host's clock last ticked (event time). */
  lastTick: number;
  /** The last offset judged per topic/partition, so a redelivered message is not judged twice. */
  offsets: Record<string, number>;
  /**
   * Raw kernel lines (recordings) the parser has not yet emitted in an event, with their
   * positions and arrival times: the parser is rebuilt from them after a restart.
   */
  kernel?: { next: number; lines: [number, string, number][] };
  /** The host layer (BMC, training network): what its rules remember between readings. */
  hostLayer?: HostLayerState;
  /**
   * A cooling fault firing on the host (a failed fan, an inlet above its normal): until `until`,
   * the GPU alerts of the rules in `explains` join `incident`, root cause cooling.
   */
  cooling?: { incident: string; until: number; explains: string[] };
  /** The host's PCI tree as far as it leads to GPUs and NVSwitches (from its inventory): ports' AER errors name the GPUs below. */
  pci?: PciTreeDevice[];
  /** The training jobs this host is the home of (their rank 0 runs here): its clock judges their time-based rules. */
  jobs?: string[];
}

/** What the host layer's rules remember of one host: bounded by the envelope's own bounds. */
export interface HostLayerState {
  /** The host's own normal inlet temperature (the hottest inlet sensor of each reading). */
  inlet?: Baseline;
  /** Per InfiniBand port (`device/port`): seen active once, and its counters at the last reading. */
  ib?: Record<string, { active: boolean; counters: Record<string, number>; best_rate?: number }>;
  /** Fans last seen failed (name → when), kept while the BMC stops listing them: at most `MAX_FANS_PER_SAMPLE`. */
  failedFans?: Record<string, number>;
  /** BMC log entries judged (`log|entry id|created`), newest last: at most the `bmc_event` rule's `remember`. */
  bmcSeen?: string[];
}

/** State shared across hosts: jobs (for stragglers) and clusters (for version drift). */
export interface FleetState {
  version: number;
  jobs: Record<string, Record<string, { util: number; at: number }>>;
  clusters: Record<string, Record<string, { driver: string; cuda: string }>>;
  /** Training jobs by id, from their `job.event`s (`job-runs.ts`): at most `MAX_TRAINING_JOBS`. */
  training?: Record<string, JobRun>;
}

/** One rank of a training job, as its events tell. */
export interface JobRank {
  host: string;
  gpu?: number;
  step?: number;
  /** When it was last heard from. */
  at: number;
  /** Its recent step time (ms), smoothed. */
  ms?: number;
}

/** What the engine knows of one training job (all its ranks, across hosts). */
export interface JobRun {
  /** `job`, and `job_user`/`namespace`/`pod` when a sample attributed a GPU to it. */
  labels: Record<string, string>;
  heard: number;
  /** The host of its rank 0 (or the first host heard), whose clock judges its time-based rules. */
  home: string;
  /** The furthest step reached, and when it was. */
  step?: number;
  progressAt?: number;
  /** The job's own normal step time (ms, mean of its first reports) and its recent one (smoothed). */
  baseline?: { n: number; mean: number };
  recentMs?: number;
  ranks: Record<string, JobRank>;
  /** `began`: the first report of its latest checkpoint (its ranks' reports within `same_within` are that one). */
  checkpoint?: { ok?: number; step?: number; count: number; every?: number; failed?: number; began?: number };
  /** The fatal GPU fault that took it down: the root of its incident. */
  fault?: { host: string; gpu: number; at: number; fingerprint: string; what: string };
  /** When a rank reported the job's exit. */
  exited?: number;
  /** When it last restarted (a restart event, or a rank's step going back): its fault before is over. */
  restarted?: number;
}

export interface EngineState {
  hosts: Record<string, HostState>;
  fleet: FleetState;
}

/**
 * Every map in the state keyed by outside data (a host, a label value, an event id, a GPU)
 * inherits nothing: `constructor`, `toString` or `__proto__` is then only a key, never
 * Object.prototype's member, and writing it cannot change a prototype.
 */
export const dict: <T>() => Record<string, T> = inertRecord;

/** An inert copy of a record (own keys only, `__proto__` included as data). */
export const toDict: <T>(record: Readonly<Record<string, T>> | undefined) => Record<string, T> = toInertRecord;

export function emptyEngineState(): EngineState {
  return { hosts: dict(), fleet: emptyFleetState() };
}

export function emptyFleetState(): FleetState {
  return { version: ENGINE_STATE_VERSION, jobs: dict(), clusters: dict() };
}

export function newHostState(host: string, labels: Record<string, string>, template: string): HostState {
  return {
    version: ENGINE_STATE_VERSION,
    host,
    labels,
    template,
    intervalMs: 10_000,
    collectorErrors: 0,
    gpus: dict(),
    trackers: dict(),
    maintenance: dict(),
    lastTick: 0,
    offsets: dict(),
  };
}

export function newGpuState(): GpuState {
  return { missing: 0, baselines: dict(), counters: dict(), recent: [], xids: dict() };
}

/** Told of each thing a load migrated, repaired or could not use (for a log line). */
export type StateNote = (message: string) => void;

/**
 * A host's state as the store holds it (JSON), checked against its schema, migrated from older
 * versions, with its maps made inert again (JSON.parse keeps a `"__proto__"` key as data but hands
 * back plain objects, where `constructor` reads as a function). An entry of a map that does not
 * check (a GPU, a tracker, a window) is dropped; a state that cannot be used at all gives
 * undefined, and the host is judged afresh. Never throws.
 */
export function parseHostState(json: string, note: StateNote = () => {}): HostState | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    note('not JSON: the host starts afresh');
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    note('not an object: the host starts afresh');
    return undefined;
  }
  const host = raw as Record<string, unknown>;
  const version = host.version ?? 0;
  if (version === 0) {
    // Version 0 (no version field): the same shape with two fields no one read.
    delete host.now;
    for (const gpu of Object.values(toDict(host.gpus as Record<string, Record<string, unknown>> | undefined)))
      if (gpu && typeof gpu === 'object') delete gpu.lastSeen;
    host.version = ENGINE_STATE_VERSION;
    note(`migrated from version 0 to ${ENGINE_STATE_VERSION}`);
  } else if (version !== ENGINE_STATE_VERSION) {
    note(`version ${JSON.stringify(version)} is not one this engine reads (${ENGINE_STATE_VERSION}): the host starts afresh`);
    return undefined;
  }
  const checked = HostStateSchema.safeParse(host);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    note(`${issue?.path.join('.') || 'state'}: ${issue?.message ?? 'invalid'}: the host starts afresh`);
    return undefined;
  }
  const state = host as unknown as HostState;
  state.labels = toDict(state.labels);
  for (const [name, value] of Object.entries(state.labels)) if (typeof value !== 'string') delete state.labels[name];
  if (state.inventory) state.inventory.buses = toDict(state.inventory.buses);
  if (state.buses) state.buses = toDict(state.buses);
  state.gpus = checkedEntries(state.gpus, GpuStateSchema, 'gpus', note);
  for (const gpu of Object.values(state.gpus)) {
    gpu.baselines = toDict(gpu.baselines);
    gpu.counters = toDict(gpu.counters);
    gpu.xids = toDict(gpu.xids);
    if (gpu.job) gpu.job = toDict(gpu.job);
  }
  state.trackers = checkedEntries(state.trackers, TrackerSchema, 'trackers', note);
  for (const tracker of Object.values(state.trackers)) if (tracker.labels) tracker.labels = toDict(tracker.labels);
  state.maintenance = checkedEntries(state.maintenance, MaintenanceWindowSchema, 'maintenance', note);
  state.offsets = toDict(state.offsets);
  if (state.hostLayer?.ib) {
    state.hostLayer.ib = toDict(state.hostLayer.ib);
    for (const port of Object.values(state.hostLayer.ib)) port.counters = toDict(port.counters);
  }
  if (state.hostLayer?.failedFans) state.hostLayer.failedFans = toDict(state.hostLayer.failedFans);
  return state;
}

/** An inert copy of `record` with only the entries `schema` accepts; each dropped one noted. */
function checkedEntries<T>(
  record: Record<string, T>,
  schema: { safeParse(v: unknown): { success: boolean } },
  field: string,
  note: StateNote,
): Record<string, T> {
  const out = toDict(record);
  for (const key of Object.keys(out)) {
    if (schema.safeParse(out[key]).success) continue;
    delete out[key];
    note(`${field}.${JSON.stringify(key.slice(0, 80))} does not check: dropped`);
  }
  return out;
}

/** The fleet's state as the store holds it, checked and its maps inert as `parseHostState`'s; what does not check starts empty. */
export function parseFleetState(json: string, note: StateNote = () => {}): FleetState {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    note('fleet state not JSON: starts empty');
    return emptyFleetState();
  }
  const checked = FleetStateSchema.safeParse(raw);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    note(`fleet state ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}: starts empty`);
    return emptyFleetState();
  }
  const fleet = raw as Partial<FleetState>;
  const jobs = toDict(fleet.jobs);
  for (const job of Object.keys(jobs)) jobs[job] = toDict(jobs[job]);
  const clusters = toDict(fleet.clusters);
  for (const cluster of Object.keys(clusters)) clusters[cluster] = toDict(clusters[cluster]);
  if (fleet.training === undefined) return { version: ENGINE_STATE_VERSION, jobs, clusters };
  const training = checkedEntries(fleet.training, JobRunSchema, 'training', note);
  for (const run of Object.values(training)) {
    run.labels = toDict(run.labels);
    run.ranks = toDict(run.ranks);
  }
  return { version: ENGINE_STATE_VERSION, jobs, clusters, training };
}
