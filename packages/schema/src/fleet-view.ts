import { z } from 'zod';
import { MAX_GPU_INDEX, MAX_HOST_LENGTH, MAX_LABEL_VALUE_LENGTH } from './bounds.ts';
import { GpuIndex } from './metrics.ts';
import { Severity } from './severity.ts';

/**
 * What the live console shows of the fleet, as one snapshot: the contract between whoever knows
 * the fleet (the engine's state, a fixture, the notifier's own alerts) and the page. Every list
 * has a stated bound, so one snapshot costs only so much to build, send and draw.
 */

/** 10,000 hosts × 8 GPUs is about 8 MB of JSON: the most one page load fetches and draws. */
export const MAX_FLEET_HOSTS = 10_000;
/**
 * Hosts' fleet-wide shares (`engine:fleet:hosts`) one engine reads into its view at a tick: the
 * 100,000 hosts docs/scaling.md sizes the engines for. Past it, the rest are left out with a warning.
 */
export const MAX_SHARED_HOSTS = 10 * MAX_FLEET_HOSTS;
/** Engines one console merges (each serves the hosts it owns). */
export const MAX_FLEET_SOURCES = 64;
/** Fleet-wide recent events in one snapshot (newest first). */
export const MAX_FLEET_EVENTS = 200;
/** Recent events and firing alerts one GPU carries. */
export const MAX_GPU_EVENTS = 32;
export const MAX_GPU_ALERTS = 32;
/** Maintenance windows and drift findings one host carries. */
export const MAX_HOST_WINDOWS = 16;
export const MAX_HOST_DRIFT = 16;
/** A summary or description as the console shows it: longer text is cut by the builder. */
export const MAX_VIEW_TEXT = 1_024;

/** The metrics the console draws against their baselines: temperature, power, utilisation, memory used. */
export const FLEET_METRICS = ['temp_c', 'power_w', 'util_pct', 'mem_used_mib'] as const;
export type FleetMetric = (typeof FLEET_METRICS)[number];

/** A GPU's or host's state: its worst firing severity, or `ok`. */
export const VIEW_STATES = ['ok', 'info', 'warning', 'error', 'critical'] as const;
export const ViewState = z.enum(VIEW_STATES);
export type ViewState = z.infer<typeof ViewState>;

const text = z.string().max(MAX_VIEW_TEXT);
const label = z.string().max(MAX_LABEL_VALUE_LENGTH);
/** Epoch milliseconds. */
const time = z.number().int().nonnegative();

/** A GPU's own normal for one metric at its current load: the band is mean ± k·spread. */
export const BaselineBand = z.object({
  mean: z.number(),
  spread: z.number().nonnegative(),
  k: z.number().positive(),
  /** How many samples taught it. */
  n: z.number().int().nonnegative(),
  /** The load level it belongs to, as the engine names it (e.g. `util 75-100%`); null when baselines are not split by load. */
  load: label.nullable(),
});
export type BaselineBand = z.infer<typeof BaselineBand>;

export const MetricView = z.object({
  /** The latest value; null when the last sample did not carry it. */
  value: z.number().nullable(),
  band: BaselineBand.nullable(),
  /** The median of the same metric over the host's other GPUs; null with no sibling reporting it. */
  siblings_median: z.number().nullable(),
});
export type MetricView = z.infer<typeof MetricView>;

export const AlertView = z.object({
  fingerprint: label.min(1),
  rule: label,
  category: label,
  severity: Severity,
  summary: text,
  since: time.nullable(),
  incident: label.nullable(),
});
export type AlertView = z.infer<typeof AlertView>;

export const EventView = z.object({
  at: time,
  host: z.string().min(1).max(MAX_HOST_LENGTH),
  gpu: GpuIndex.nullable(),
  /** What happened, in a word: `xid`, `alert`, `resolved`, `maintenance`… */
  kind: label,
  summary: text,
});
export type EventView = z.infer<typeof EventView>;

export const GpuView = z.object({
  index: GpuIndex,
  uuid: label.nullable(),
  name: label.nullable(),
  state: ViewState,
  metrics: z.object({ temp_c: MetricView, power_w: MetricView, util_pct: MetricView, mem_used_mib: MetricView }),
  mem_total_mib: z.number().nullable(),
  /** When the GPU was last in its host's samples (event time); null when unknown. Older than its host's `last_seen`: the GPU is missing from them (fallen off the bus). */
  seen: time.nullable().optional(),
  alerts: z.array(AlertView).max(MAX_GPU_ALERTS),
  events: z.array(EventView).max(MAX_GPU_EVENTS),
});
export type GpuView = z.infer<typeof GpuView>;

export const MaintenanceView = z.object({
  id: label.min(1),
  /** Open now (started, or scheduled and inside its times), or closed (scheduled ahead, completed, cancelled). */
  open: z.boolean(),
  status: z.enum(['scheduled', 'started', 'completed', 'cancelled']),
  start: time.nullable(),
  end: time.nullable(),
  description: text,
});
export type MaintenanceView = z.infer<typeof MaintenanceView>;

export const HostView = z.object({
  host: z.string().min(1).max(MAX_HOST_LENGTH),
  /** When its last sample arrived (event time); null before the first. */
  last_seen: time.nullable(),
  template: label,
  /** What drifts from the host's cluster (driver, CUDA): one line each. */
  drift: z.array(text).max(MAX_HOST_DRIFT),
  maintenance: z.array(MaintenanceView).max(MAX_HOST_WINDOWS),
  /** The worst of its GPUs' states and its host-wide alerts'. */
  state: ViewState,
  /** Firing alerts on the host that name no GPU (host down, drift, collector). */
  alerts: z.array(AlertView).max(MAX_GPU_ALERTS),
  gpus: z.array(GpuView).max(MAX_GPU_INDEX + 1),
});
export type HostView = z.infer<typeof HostView>;

export const FLEET_SNAPSHOT_VERSION = 1;
/** An engine's `GET /v1/fleet` as NDJSON (asked with this Accept): the snapshot with `hosts: []` on the first line, then one HostView a line. */
export const FLEET_NDJSON = 'application/x-ndjson';

export const FleetSnapshot = z.object({
  version: z.literal(FLEET_SNAPSHOT_VERSION),
  /** When it was built (epoch ms). */
  at: time,
  /** Who built it: `engine`, `store`, `alerts`, `fixture`. */
  source: label,
  hosts: z.array(HostView).max(MAX_FLEET_HOSTS),
  /** Hosts past MAX_FLEET_HOSTS that the snapshot left out. */
  omitted_hosts: z.number().int().nonnegative(),
  events: z.array(EventView).max(MAX_FLEET_EVENTS),
  /**
   * The data's own now when it is a recording (an engine on the event clock: `up --demo`, replays):
   * the latest event time it judged. The console says how long ago from it, not from the wall clock.
   */
  data_at: time.nullable().optional(),
  /** Engines that did not answer (their hosts are missing), each as `url: why`. */
  unavailable: z.array(text).max(MAX_FLEET_SOURCES).optional(),
});
export type FleetSnapshot = z.infer<typeof FleetSnapshot>;

/** Points one GPU's history keeps: one per HISTORY_STEP_MS of event time, so 30 minutes. */
export const MAX_HISTORY_POINTS = 120;
export const HISTORY_STEP_MS = 15_000;

const series = z.array(z.number().nullable()).max(MAX_HISTORY_POINTS);
/** One metric over the history: its values and its normal band (mean ± k·spread at each point's load), null where unknown. */
export const MetricHistory = z.object({ values: series, low: series, high: series });
export type MetricHistory = z.infer<typeof MetricHistory>;

/** A GPU's recent history, oldest first: the engine's bounded ring (the last sample of each step). */
export const GpuHistory = z.object({
  step_ms: z.number().int().positive(),
  at: z.array(time).max(MAX_HISTORY_POINTS),
  metrics: z.object({ temp_c: MetricHistory, power_w: MetricHistory, util_pct: MetricHistory, mem_used_mib: MetricHistory }),
});
export type GpuHistory = z.infer<typeof GpuHistory>;

/** Where the console gets its snapshots: the engine in `gpualert up`, the engines' endpoints, a fixture in tests. */
export interface FleetSource {
  snapshot(now: number): Promise<FleetSnapshot>;
  /** One GPU's recent history, where the source keeps one (the engines do); null for a GPU it does not know. */
  history?(host: string, gpu: number): Promise<GpuHistory | null>;
}

/** The worse of two view states (`ok` is the best). */
export function worseState(a: ViewState, b: ViewState): ViewState {
  return VIEW_STATES.indexOf(a) >= VIEW_STATES.indexOf(b) ? a : b;
}

/** A metric with nothing known: no value, no band, no siblings. */
export function emptyMetricView(): MetricView {
  return { value: null, band: null, siblings_median: null };
}
