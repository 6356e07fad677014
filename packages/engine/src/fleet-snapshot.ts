import {
  FLEET_SNAPSHOT_VERSION,
  isGpuIndex,
  MAX_FLEET_EVENTS,
  MAX_FLEET_HOSTS,
  MAX_GPU_ALERTS,
  MAX_GPU_EVENTS,
  MAX_HOST_DRIFT,
  MAX_HOST_WINDOWS,
  MAX_LABEL_VALUE_LENGTH,
  MAX_VIEW_TEXT,
  worseState,
  type AlertView,
  type BaselineBand,
  type EventView,
  type FleetMetric,
  type FleetSnapshot,
  type FleetSource,
  type GpuHistory,
  type GpuMetrics,
  type GpuView,
  type HostView,
  type MaintenanceView,
  type MetricView,
  type ViewState,
} from '@gpualert/schema';
import { fingerprintOf, inMaintenance } from './conditions.ts';
import { parseHostState, type GpuState, type HostState } from './engine-state.ts';
import { baselineBand } from './fleet-metrics.ts';
import type { GpuHistoryRing } from './gpu-history.ts';
import { fallbackTemplate, type BoundTemplate, type RuleSet } from './load-rules.ts';
import { middleOf } from './peer-medians.ts';
import type { RuleOf } from './rule-set.ts';
import { engineHostKey, enginePartitionKey } from './store-keys.ts';

/** A host's last GPU sample, as whoever feeds the console keeps it (the engine's state holds baselines, not values). */
export interface LatestGpuSample {
  readonly at: number;
  readonly gpus: readonly GpuMetrics[];
}

/** What the engine keeps beside its state for the console: each GPU's recent values, and what its kernel events said. */
export interface FleetViewExtras {
  /** A host's GPUs' history rings (fleet-snapshot reads each one's last point for a GPU missing from the latest sample). */
  readonly rings?: (host: string) => ReadonlyMap<number, GpuHistoryRing> | undefined;
  /** A kernel event's text by its id (`Xid 79: GPU has fallen off the bus`), while the engine remembers it. */
  readonly describe?: (id: string) => string | undefined;
}

export interface FleetSnapshotInput extends FleetViewExtras {
  readonly hosts: Iterable<HostState>;
  readonly latest: ReadonlyMap<string, LatestGpuSample>;
  readonly ruleSet: RuleSet;
  readonly now: number;
  readonly source: string;
  /** The data's own now, when it is a recording (the event clock). */
  readonly dataAt?: number | null;
}

const cut = (text: string, max = MAX_VIEW_TEXT) => (text.length > max ? text.slice(0, max) : text);

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  return middleOf(values.sort((a, b) => a - b));
}

/**
 * One metric's band at the GPU's current load: the band the baseline judge compares with, as
 * `/metrics` exports it (fleet-metrics.ts's `baselineBand`), with the load it belongs to named as
 * that function picks it (idle, busy, or between the two the nearer).
 */
function bandOf(rule: RuleOf<'baseline'> | undefined, bound: BoundTemplate, gs: GpuState | undefined, util: number | null): BaselineBand | null {
  if (!rule || util === null) return null;
  const band = baselineBand(rule, bound, gs?.baselines ?? {}, util);
  if (!band) return null;
  const idle = util < rule.idle_below || (util < rule.busy_at_least && util - rule.idle_below < rule.busy_at_least - util);
  const between = util >= rule.idle_below && util < rule.busy_at_least;
  const load = idle ? `idle (util < ${rule.idle_below}%)` : `busy (util ≥ ${rule.busy_at_least}%)`;
  const n = gs?.baselines[`${rule.metric}:${idle ? 'idle' : 'busy'}`]?.n ?? 0;
  return { mean: band.mean, spread: band.dev, k: rule.sigmas, n, load: between ? `${load}, the nearer normal` : load };
}

/** The host's template and its baseline rule per metric (the first of each). */
function baselinesOf(host: HostState, ruleSet: RuleSet): { bound: BoundTemplate; rules: Map<string, RuleOf<'baseline'>> } {
  const bound = ruleSet.templates.find((t) => t.template.name === host.template) ?? fallbackTemplate(ruleSet);
  const rules = new Map<string, RuleOf<'baseline'>>();
  for (const rule of bound.rules) if (rule.kind === 'baseline' && !rules.has(rule.metric)) rules.set(rule.metric, rule);
  return { bound, rules };
}

/** One GPU's history ring as the console draws it: each point with its band at that point's load. */
export function gpuHistoryView(host: HostState, index: number, ring: GpuHistoryRing, ruleSet: RuleSet): GpuHistory {
  const { bound, rules } = baselinesOf(host, ruleSet);
  const gs = Object.hasOwn(host.gpus, String(index)) ? host.gpus[String(index)] : undefined;
  return ring.view((metric, util) => {
    const band = bandOf(rules.get(metric), bound, gs, util);
    return band ? { low: band.mean - band.k * band.spread, high: band.mean + band.k * band.spread } : null;
  });
}

/** What the GPU's state remembers of a kernel event: its Xid code, found by the event's time among the codes' times. */
function xidOf(gs: GpuState | undefined, at: number): string | undefined {
  if (!gs) return undefined;
  for (const [code, times] of Object.entries(gs.xids)) if (times.includes(at)) return `Xid ${code}`;
  return undefined;
}

/** A window is open as the engine holds it open (conditions.ts's `inMaintenance`: 15 minutes' slack either side). */
function windowView(host: HostState, id: string, w: HostState['maintenance'][string], now: number): MaintenanceView {
  const one: HostState['maintenance'] = Object.create(null);
  one[id] = w;
  return {
    id: cut(id, MAX_LABEL_VALUE_LENGTH),
    open: inMaintenance({ ...host, maintenance: one }, now),
    status: w.status,
    start: w.start ?? null,
    end: w.end ?? null,
    description: cut(w.description),
  };
}

/** One host as the console shows it; its firing alerts' start times feed the fleet's events. */
export function fleetHostView(
  host: HostState,
  latest: LatestGpuSample | undefined,
  ruleSet: RuleSet,
  extras: FleetViewExtras = {},
): { view: HostView; events: EventView[] } {
  const { bound, rules: baselines } = baselinesOf(host, ruleSet);
  const rings = extras.rings?.(host.host);
  // The host's own clock (event time), as /metrics takes it: what is open is measured on it.
  const now = Math.max(host.lastSample ?? 0, host.lastTick);
  const samples = new Map<number, GpuMetrics>();
  for (const gpu of latest?.gpus ?? []) samples.set(gpu.index, gpu);
  const indexes = new Set<number>([...samples.keys(), ...(host.inventory?.indexes ?? [])]);
  for (const key of Object.keys(host.gpus)) indexes.add(Number(key));
  const gpus = new Map<number, GpuView>();
  for (const index of [...indexes].filter(isGpuIndex).sort((a, b) => a - b)) {
    const sample = samples.get(index);
    const gs = Object.hasOwn(host.gpus, String(index)) ? host.gpus[String(index)] : undefined;
    const ring = rings?.get(index);
    // A GPU missing from the latest sample (fallen off the bus) keeps the band of its last known load.
    const util = sample ? sample.util_pct : (ring?.lastValue('util_pct') ?? null);
    const metricView = (metric: FleetMetric): MetricView => {
      const siblings: number[] = [];
      for (const other of samples.values()) if (other.index !== index && other[metric] !== null && Number.isFinite(other[metric])) siblings.push(other[metric]);
      const value = sample?.[metric] ?? null;
      return {
        value: value !== null && Number.isFinite(value) ? value : null,
        band: bandOf(baselines.get(metric), bound, gs, util),
        siblings_median: median(siblings),
      };
    };
    const metrics: Record<FleetMetric, MetricView> = {
      temp_c: metricView('temp_c'),
      power_w: metricView('power_w'),
      util_pct: metricView('util_pct'),
      mem_used_mib: metricView('mem_used_mib'),
    };
    const events: EventView[] = (gs?.recent ?? [])
      .slice(-MAX_GPU_EVENTS)
      .reverse()
      .map(([id, at]) => ({
        at,
        host: host.host,
        gpu: index,
        kind: 'kernel',
        summary: cut(extras.describe?.(id) ?? xidOf(gs, at) ?? `kernel event ${id.slice(0, 8)}`),
      }));
    gpus.set(index, {
      index,
      uuid: sample?.uuid ?? null,
      name: sample?.name ?? null,
      state: 'ok',
      metrics,
      mem_total_mib: sample?.mem_total_mib ?? null,
      seen: sample && latest ? latest.at : (ring?.lastAt() ?? null),
      alerts: [],
      events,
    });
  }
  const view: HostView = {
    host: host.host,
    last_seen: host.lastSample ?? null,
    template: cut(host.template, MAX_LABEL_VALUE_LENGTH),
    drift: [],
    maintenance: Object.entries(host.maintenance)
      .slice(-MAX_HOST_WINDOWS)
      .map(([id, w]) => windowView(host, id, w, now)),
    state: 'ok',
    alerts: [],
    gpus: [],
  };
  const events: EventView[] = [];
  // As /metrics counts them: what the world was told is firing; a maintenance notice or a drift is
  // about the host (no GPU's fault, no incident), any other host-wide alert darkens every GPU.
  const firing = Object.entries(host.trackers).filter(([, t]) => t.told === 'firing');
  const faults = firing.some(([, t]) => t.category !== 'drift' && t.category !== 'maintenance');
  const openIncident = host.incident !== undefined && (faults || now <= host.incident.until) ? host.incident.fingerprint : null;
  let hostWide: ViewState = 'ok';
  for (const [key, t] of firing) {
    const aboutTheHost = t.category === 'drift' || t.category === 'maintenance';
    const since = t.startsAt ?? t.since ?? null;
    const cooling = host.cooling && now <= host.cooling.until && host.cooling.explains.includes(t.rule) ? host.cooling.incident : null;
    const incident = aboutTheHost ? null : (cooling ?? openIncident);
    const alert: AlertView = {
      fingerprint: fingerprintOf(host.host, key),
      rule: cut(t.rule, MAX_LABEL_VALUE_LENGTH),
      category: cut(t.category, MAX_LABEL_VALUE_LENGTH),
      severity: t.severity,
      summary: cut(t.summary),
      since,
      incident,
    };
    const gpu = t.gpu === undefined ? undefined : gpus.get(t.gpu);
    const list = gpu ? gpu.alerts : view.alerts;
    if (list.length < MAX_GPU_ALERTS) list.push(alert);
    if (gpu) gpu.state = worseState(gpu.state, t.severity);
    else if (!aboutTheHost) hostWide = worseState(hostWide, t.severity);
    view.state = worseState(view.state, t.severity);
    if (t.category === 'drift' && view.drift.length < MAX_HOST_DRIFT) view.drift.push(cut(t.summary));
    if (since !== null) {
      const event: EventView = {
        at: since,
        host: host.host,
        gpu: gpu ? gpu.index : null,
        kind: aboutTheHost ? t.category : 'alert',
        summary: cut(`${t.severity}: ${t.summary}`),
      };
      events.push(event);
      if (gpu && gpu.events.length < MAX_GPU_EVENTS) gpu.events.unshift(event);
    }
  }
  for (const gpu of gpus.values()) gpu.state = worseState(gpu.state, hostWide);
  for (const gpu of gpus.values()) gpu.events.sort((a, b) => b.at - a.at);
  view.gpus = [...gpus.values()];
  return { view, events };
}

/** The fleet as the console draws it, from the engine's host states and each host's last sample. Pure. */
export function buildFleetSnapshot(input: FleetSnapshotInput): FleetSnapshot {
  const hosts: HostView[] = [];
  const events: EventView[] = [];
  let omitted = 0;
  for (const host of input.hosts) {
    if (hosts.length >= MAX_FLEET_HOSTS) {
      omitted += 1;
      continue;
    }
    const built = fleetHostView(host, input.latest.get(host.host), input.ruleSet, input);
    hosts.push(built.view);
    events.push(...built.events);
  }
  hosts.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  events.sort((a, b) => b.at - a.at);
  const snapshot: FleetSnapshot = {
    version: FLEET_SNAPSHOT_VERSION,
    at: input.now,
    source: input.source,
    hosts,
    omitted_hosts: omitted,
    events: events.slice(0, MAX_FLEET_EVENTS),
  };
  return input.dataAt === undefined || input.dataAt === null ? snapshot : { ...snapshot, data_at: input.dataAt };
}

/** What the snapshot reads of a state store: a narrow view of @gpualert/state's StateStore. */
export interface HostStateReader {
  get(key: string): Promise<string | null>;
  hashGetAll(key: string): Promise<Record<string, string>>;
}

/**
 * The console's fleet from the store the engine saves each judged host to: the hosts of every
 * partition's index, and any host a sample was heard from, each read and checked as the engine
 * reads it at start. Works in `gpualert up` (the in-process store) and beside a split engine (Redis).
 */
export function storeFleetSource(store: HostStateReader, latest: ReadonlyMap<string, LatestGpuSample>, ruleSet: RuleSet, partitions: number): FleetSource {
  return {
    async snapshot(now) {
      const names = new Set<string>();
      for (let p = 0; p < partitions; p += 1) for (const host of Object.keys(await store.hashGetAll(enginePartitionKey(p)))) names.add(host);
      for (const host of latest.keys()) names.add(host);
      const listed = [...names].sort().slice(0, MAX_FLEET_HOSTS);
      const texts = await Promise.all(listed.map((host) => store.get(engineHostKey(host))));
      const hosts: HostState[] = [];
      texts.forEach((text) => {
        const state = text === null ? undefined : parseHostState(text);
        if (state) hosts.push(state);
      });
      const snapshot = buildFleetSnapshot({ hosts, latest, ruleSet, now, source: 'engine' });
      return { ...snapshot, omitted_hosts: snapshot.omitted_hosts + Math.max(0, names.size - MAX_FLEET_HOSTS) };
    },
  };
}
