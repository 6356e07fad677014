import type { Severity } from '@gpualert/schema';

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

export function emptyEngineState(): EngineState {
  return { hosts: {}, fleet: { jobs: {}, clusters: {} } };
}

export function newHostState(host: string, labels: Record<string, string>, template: string): HostState {
  return { host, labels, template, intervalMs: 10_000, collectorErrors: 0, gpus: {}, trackers: {}, maintenance: {}, now: 0, lastTick: 0, offsets: {} };
}

export function newGpuState(): GpuState {
  return { lastSeen: 0, missing: 0, baselines: {}, counters: {}, recent: [], xids: {} };
}
