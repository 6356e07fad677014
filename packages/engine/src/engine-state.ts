import { inertRecord, toInertRecord, type Severity } from '@gpualert/schema';

/** A GPU's own normal for one metric at one load level, learned online. */
export interface Baseline {
  n: number;
  mean: number;
  /** Mean absolute deviation: robust enough, and cheap. */
  dev: number;
}

export interface GpuState {
  lastSeen: number;
  /** Consecutive samples of the host this GPU was missing from. */
  missing: number;
  baselines: Record<string, Baseline>;
  counters: Record<string, number>;
  /** Recent kernel events on this GPU (ids and times), to attach as evidence. */
  recent: [string, number][];
  /** Times of each Xid code on this GPU, for repeat escalation. */
  xids: Record<string, number[]>;
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
}

export interface MaintenanceWindow {
  status: 'scheduled' | 'started' | 'completed' | 'cancelled';
  start?: number;
  end?: number;
  description: string;
}

export interface HostState {
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
  /** The latest event time seen for this host: the engine's clock. */
  now: number;
  /** When this host's clock last ticked (event time). */
  lastTick: number;
  /** The last offset judged per topic/partition, so a redelivered message is not judged twice. */
  offsets: Record<string, number>;
}

/** State shared across hosts: jobs (for stragglers) and clusters (for version drift). */
export interface FleetState {
  jobs: Record<string, Record<string, { util: number; at: number }>>;
  clusters: Record<string, Record<string, { driver: string; cuda: string }>>;
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
  return { jobs: dict(), clusters: dict() };
}

export function newHostState(host: string, labels: Record<string, string>, template: string): HostState {
  return { host, labels, template, intervalMs: 10_000, collectorErrors: 0, gpus: dict(), trackers: dict(), maintenance: dict(), now: 0, lastTick: 0, offsets: dict() };
}

export function newGpuState(): GpuState {
  return { lastSeen: 0, missing: 0, baselines: dict(), counters: dict(), recent: [], xids: dict() };
}

/**
 * A host's state as the store holds it (JSON), with its maps made inert again: JSON.parse
 * keeps a `"__proto__"` key as data but hands back plain objects, where `constructor` reads as a function.
 */
export function parseHostState(json: string): HostState {
  const host = JSON.parse(json) as HostState;
  host.labels = toDict(host.labels);
  if (host.inventory) host.inventory.buses = toDict(host.inventory.buses);
  if (host.buses) host.buses = toDict(host.buses);
  host.gpus = toDict(host.gpus);
  for (const gpu of Object.values(host.gpus)) {
    gpu.baselines = toDict(gpu.baselines);
    gpu.counters = toDict(gpu.counters);
    gpu.xids = toDict(gpu.xids);
  }
  host.trackers = toDict(host.trackers);
  host.maintenance = toDict(host.maintenance);
  host.offsets = toDict(host.offsets);
  return host;
}

/** The fleet's state as the store holds it, its maps inert as `parseHostState`'s. */
export function parseFleetState(json: string): FleetState {
  const fleet = JSON.parse(json) as Partial<FleetState>;
  const jobs = toDict(fleet.jobs);
  for (const job of Object.keys(jobs)) jobs[job] = toDict(jobs[job]);
  const clusters = toDict(fleet.clusters);
  for (const cluster of Object.keys(clusters)) clusters[cluster] = toDict(clusters[cluster]);
  return { jobs, clusters };
}
