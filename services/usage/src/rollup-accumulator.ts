import {
  MAX_GPU_INDEX,
  MAX_USAGE_EVIDENCE,
  MINUTES_PER_HOUR,
  newEnvelope,
  stableId,
  toInertRecord,
  type Envelope,
  type EnvelopeOf,
  type GpuMetrics,
  type UsageRollupData,
} from '@gpualert/schema';
import { clip, covered, merge, subtract, type Interval } from './interval-set.ts';

/**
 * The usage rollups, as a pure accumulator over envelopes in event time: per host and GPU it
 * credits the time each sample stands for to minute slots of the open hours, and when event time
 * has passed an hour by the grace period it classifies those minutes against the fault alerts and
 * maintenance windows it has seen, and emits one `usage.rollup` per GPU for that hour.
 * docs/usage.md says how each state is counted.
 */

export const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

/** The idle-cost rule's `util_below` when no rule says (rules/defaults.yaml ships 2 %). */
export const DEFAULT_BUSY_THRESHOLD_PCT = 2;
/** How long after an hour's end its samples may still come before it is emitted. */
export const DEFAULT_USAGE_GRACE_MS = 10 * MINUTE_MS;
/** The longest a sample stands for: a host silent for longer is not seen, whatever its last sample said. */
export const MAX_SAMPLE_SPAN_MS = 5 * MINUTE_MS;
/** A sample stands for up to this many of its host's last intervals, so jitter loses nothing and silence is not counted. */
export const SAMPLE_SPAN_INTERVALS = 1.5;
/** What a sample stands for when its host has no interval yet (its first sample). */
export const FIRST_SAMPLE_SPAN_MS = MINUTE_MS;
/** Hosts held at once; past it a new host's envelopes are counted and not rolled up. */
export const MAX_USAGE_HOSTS = 100_000;
/** Fault alert intervals kept per GPU (and per host, for host-wide faults); the oldest ended ones go first. */
export const MAX_FAULTS_PER_GPU = 32;
/** Maintenance windows kept per host, as the engine keeps them. */
export const MAX_WINDOWS_PER_HOST = 32;
/** Jobs told apart within one GPU-hour; the rollup names the one that held the GPU longest. */
const MAX_JOBS_PER_GPU_HOUR = 8;

/**
 * Alert categories that say nothing about a GPU being broken, whatever their severity: cost and
 * job hygiene, gpualert's own pipeline, the collector, and maintenance (counted as such).
 */
export const NON_FAULT_CATEGORIES: ReadonlySet<string> = new Set([
  'idle_cost',
  'stuck_job',
  'straggler',
  'baseline',
  'drift',
  'pipeline',
  'collector',
  'maintenance',
]);
/** Host-wide alerts (no GPU) that make every GPU of the host broken: the host itself is down or faulted. */
export const HOST_FAULT_CATEGORIES: ReadonlySet<string> = new Set(['host_down', 'kernel', 'xid', 'fallen_off_bus', 'nvlink', 'pcie']);
/** Provider events that open a maintenance window. */
const WINDOW_KINDS: ReadonlySet<string> = new Set(['maintenance', 'reboot', 'migration']);

export interface UsageOptions {
  readonly busyThresholdPct?: number;
  readonly graceMs?: number;
  readonly source?: string;
}

export interface UsageStats {
  /** Samples dated before their host's last one, or in an hour already emitted. */
  late: number;
  /** Fault alerts that came after the hours they cover were emitted (a backlog of alerts behind the samples). */
  lateAlerts: number;
  /** Envelopes of hosts past `MAX_USAGE_HOSTS`. */
  refusedHosts: number;
  rollups: number;
}

interface Slots {
  readonly present: Float64Array;
  readonly busy: Float64Array;
  readonly lost: Float64Array;
  readonly jobs: Map<string, { job?: string; user?: string; ms: number }>;
}

interface GpuNow {
  readonly present: boolean;
  readonly busy: boolean;
  readonly job?: string;
  readonly user?: string;
}

interface GpuKnown {
  uuid?: string;
  name?: string;
}

interface Fault extends Interval {
  readonly fingerprint: string;
}

interface Window {
  start: number | undefined;
  end: number;
  readonly eventId: string;
}

interface HostUsage {
  lastAt: number | undefined;
  interval: number | undefined;
  /** The host's event time: its latest sample's, moved on by the wall clock while it is silent. */
  clock: number;
  /** Hours before this are emitted: nothing more is credited to them. */
  closedBefore: number;
  /** When (receipt time) anything of the host last came. */
  heardAt: number;
  credited: boolean;
  now: Map<number, GpuNow>;
  readonly known: Map<number, GpuKnown>;
  readonly hours: Map<number, Map<number, Slots>>;
  /** Fault alerts by GPU index; -1 holds the host-wide ones. */
  readonly faults: Map<number, Map<string, Fault>>;
  readonly windows: Map<string, Window>;
  labels: Record<string, string>;
  inventory: { provider?: string; gpu_model?: string; instance_type?: string; instance_id?: string };
}

type Rollup = EnvelopeOf<'usage.rollup'>;

const OPEN = Number.POSITIVE_INFINITY;

export class UsageAccumulator {
  readonly stats: UsageStats = { late: 0, lateAlerts: 0, refusedHosts: 0, rollups: 0 };
  private readonly hosts = new Map<string, HostUsage>();
  private readonly threshold: number;
  private readonly grace: number;
  private readonly source: string;

  constructor(options: UsageOptions = {}) {
    this.threshold = options.busyThresholdPct ?? DEFAULT_BUSY_THRESHOLD_PCT;
    // A sample's span must end inside the grace period, or an hour would close before it is credited.
    this.grace = Math.max(options.graceMs ?? DEFAULT_USAGE_GRACE_MS, MAX_SAMPLE_SPAN_MS);
    this.source = options.source ?? 'usage/0.1.0';
  }

  get busyThresholdPct(): number {
    return this.threshold;
  }

  /** How many hosts are held (bounded by `MAX_USAGE_HOSTS`). */
  get hostCount(): number {
    return this.hosts.size;
  }

  /**
   * Takes one envelope; returns the rollups of the hours its host's samples closed. Each host's
   * hours close by its own samples' time, not the fleet's: one partition read ahead of another
   * (a backlog, a restart) must not make the other's samples late. `receivedAt` (the wall clock
   * at receipt; event time in recordings) tells `advance` which hosts went silent.
   */
  push(envelope: Envelope, receivedAt?: number): Rollup[] {
    const at = Date.parse(envelope.ts);
    if (!Number.isFinite(at)) return [];
    switch (envelope.type) {
      case 'gpu.sample': {
        const host = this.sample(envelope, at);
        if (!host) return [];
        host.heardAt = receivedAt ?? at;
        return this.closeHost(envelope.host, host, Math.floor((host.clock - this.grace) / HOUR_MS) * HOUR_MS);
      }
      case 'alert':
        this.alert(envelope);
        return [];
      case 'provider.event':
        this.providerEvent(envelope, at);
        return [];
      case 'host.inventory':
        this.inventory(envelope);
        return [];
      default:
        return [];
    }
  }

  /**
   * The wall clock's tick: a host heard nothing from for a grace period has its event time moved
   * on by as long, so the hours of a host that went down close too. A host whose samples still
   * come (a backlog being worked off) is left to them.
   */
  advance(now: number): Rollup[] {
    const out: Rollup[] = [];
    for (const [name, host] of this.hosts) {
      if (host.lastAt === undefined || now - host.heardAt < this.grace) continue;
      const clock = host.lastAt + (now - host.heardAt);
      if (clock <= host.clock) continue;
      host.clock = clock;
      out.push(...this.closeHost(name, host, Math.floor((clock - this.grace) / HOUR_MS) * HOUR_MS));
    }
    return out;
  }

  /** The end of a recording: every open hour is emitted as it stands. */
  flush(): Rollup[] {
    const out: Rollup[] = [];
    for (const [name, host] of this.hosts) {
      if (host.lastAt === undefined) continue;
      host.clock = Math.max(host.clock, host.lastAt + MAX_SAMPLE_SPAN_MS);
      out.push(...this.closeHost(name, host, Math.ceil(host.clock / HOUR_MS) * HOUR_MS));
    }
    return out;
  }

  private host(name: string): HostUsage | undefined {
    let host = this.hosts.get(name);
    if (!host) {
      if (this.hosts.size >= MAX_USAGE_HOSTS) {
        this.stats.refusedHosts += 1;
        return undefined;
      }
      host = {
        lastAt: undefined,
        interval: undefined,
        clock: Number.NEGATIVE_INFINITY,
        closedBefore: Number.NEGATIVE_INFINITY,
        heardAt: 0,
        credited: true,
        now: new Map(),
        known: new Map(),
        hours: new Map(),
        faults: new Map(),
        windows: new Map(),
        labels: toInertRecord({}),
        inventory: {},
      };
      this.hosts.set(name, host);
    }
    return host;
  }

  private sample(envelope: EnvelopeOf<'gpu.sample'>, at: number): HostUsage | undefined {
    const host = this.host(envelope.host);
    if (!host) return undefined;
    if ((host.lastAt !== undefined && at < host.lastAt) || at < host.closedBefore) {
      this.stats.late += 1;
      return undefined;
    }
    if (host.lastAt !== undefined) {
      const gap = at - host.lastAt;
      if (!host.credited) this.credit(host, host.lastAt, Math.min(gap, this.span(host)));
      // A gap longer than any span is a silence, not the host's interval.
      if (gap > 0 && gap <= MAX_SAMPLE_SPAN_MS) host.interval = gap;
    }
    host.lastAt = at;
    host.clock = Math.max(host.clock, at);
    host.credited = false;
    host.labels = envelope.labels;
    const { gpus, error } = envelope.data;
    const now = new Map<number, GpuNow>();
    for (const gpu of gpus) {
      const known = host.known.get(gpu.index) ?? {};
      if (gpu.uuid) known.uuid = gpu.uuid;
      if (gpu.name) known.name = gpu.name;
      host.known.set(gpu.index, known);
      const job = jobOf(gpu, envelope.labels);
      now.set(gpu.index, { present: true, busy: gpu.util_pct !== null && gpu.util_pct >= this.threshold, ...job });
    }
    // A GPU seen before and missing now has fallen off the bus: broken, and still billed. A failed
    // scrape with no GPUs at all says nothing about them (nvidia-smi timed out), unless it says a GPU was lost.
    if (gpus.length > 0 || error?.code === 'gpu_lost') {
      for (const index of host.known.keys()) if (!now.has(index)) now.set(index, { present: false, busy: false });
    }
    host.now = now;
    return host;
  }

  /** What the host's last sample stands for at most. */
  private span(host: HostUsage): number {
    return host.interval === undefined ? FIRST_SAMPLE_SPAN_MS : Math.min(MAX_SAMPLE_SPAN_MS, host.interval * SAMPLE_SPAN_INTERVALS);
  }

  /** Credits [from, from + ms) with the host's current GPU states, minute slot by minute slot. */
  private credit(host: HostUsage, from: number, ms: number): void {
    const to = from + ms;
    let t = Math.max(from, host.closedBefore);
    while (t < to) {
      const hour = Math.floor(t / HOUR_MS) * HOUR_MS;
      const minute = Math.floor((t - hour) / MINUTE_MS);
      const slotEnd = Math.min(to, hour + (minute + 1) * MINUTE_MS);
      const piece = slotEnd - t;
      let gpus = host.hours.get(hour);
      if (!gpus) host.hours.set(hour, (gpus = new Map()));
      for (const [index, state] of host.now) {
        let slots = gpus.get(index);
        if (!slots) gpus.set(index, (slots = { present: new Float64Array(60), busy: new Float64Array(60), lost: new Float64Array(60), jobs: new Map() }));
        if (!state.present) {
          slots.lost[minute] = (slots.lost[minute] ?? 0) + piece;
          continue;
        }
        slots.present[minute] = (slots.present[minute] ?? 0) + piece;
        if (state.busy) slots.busy[minute] = (slots.busy[minute] ?? 0) + piece;
        if (state.job !== undefined || state.user !== undefined) {
          const key = `${state.job ?? ''}\u0000${state.user ?? ''}`;
          const held = slots.jobs.get(key);
          if (held) held.ms += piece;
          else if (slots.jobs.size < MAX_JOBS_PER_GPU_HOUR)
            slots.jobs.set(key, {
              ...(state.job !== undefined ? { job: state.job } : {}),
              ...(state.user !== undefined ? { user: state.user } : {}),
              ms: piece,
            });
        }
      }
      t = slotEnd;
    }
  }

  private alert(envelope: EnvelopeOf<'alert'>): void {
    const d = envelope.data;
    if (NON_FAULT_CATEGORIES.has(d.category)) return;
    if (d.severity !== 'error' && d.severity !== 'critical') return;
    if (!d.gpu && !HOST_FAULT_CATEGORIES.has(d.category)) return;
    const host = this.host(envelope.host);
    if (!host) return;
    const index = d.gpu ? d.gpu.index : -1;
    const start = Date.parse(d.starts_at);
    if (!Number.isFinite(start)) return;
    let faults = host.faults.get(index);
    if (!faults) host.faults.set(index, (faults = new Map()));
    // One interval per firing: a fingerprint that flaps fires again with a new start.
    const key = `${d.fingerprint}\u0000${start}`;
    const end = d.status === 'resolved' ? Date.parse(d.ends_at ?? envelope.ts) : OPEN;
    if (start < host.closedBefore && !faults.has(key)) this.stats.lateAlerts += 1;
    faults.set(key, { fingerprint: d.fingerprint, start, end: Number.isFinite(end) ? Math.max(end, start) : OPEN });
    if (faults.size > MAX_FAULTS_PER_GPU) evictOldest(faults);
  }

  private providerEvent(envelope: EnvelopeOf<'provider.event'>, at: number): void {
    const d = envelope.data;
    if (!WINDOW_KINDS.has(d.kind)) return;
    const windowStart = d.window_start ? Date.parse(d.window_start) : undefined;
    const windowEnd = d.window_end ? Date.parse(d.window_end) : undefined;
    for (const name of d.hosts) {
      const host = this.host(name);
      if (!host) continue;
      const known = host.windows.get(d.event_id);
      const w: Window = known ?? { start: undefined, end: OPEN, eventId: d.event_id };
      switch (d.status) {
        case 'scheduled':
          // An announced window is open from its start to its end, started or not.
          if (windowStart !== undefined) w.start = windowStart;
          if (windowEnd !== undefined) w.end = windowEnd;
          break;
        case 'started':
          w.start = Math.min(w.start ?? at, windowStart ?? at, at);
          if (windowEnd !== undefined && w.end === OPEN) w.end = windowEnd;
          break;
        case 'completed':
          w.start ??= windowStart ?? at;
          w.end = at;
          break;
        case 'cancelled':
          if (w.start === undefined || w.start >= at) {
            host.windows.delete(d.event_id);
            continue;
          }
          w.end = at;
          break;
      }
      host.windows.set(d.event_id, w);
      if (host.windows.size > MAX_WINDOWS_PER_HOST) evictOldest(host.windows);
    }
  }

  private inventory(envelope: EnvelopeOf<'host.inventory'>): void {
    const host = this.host(envelope.host);
    if (!host) return;
    const d = envelope.data;
    host.inventory = {
      ...(d.provider ? { provider: d.provider } : {}),
      ...(d.gpu_model ? { gpu_model: d.gpu_model } : {}),
      ...(d.instance_type ? { instance_type: d.instance_type } : {}),
      ...(d.instance_id ? { instance_id: d.instance_id } : {}),
    };
    if (d.gpus.length > 0) {
      // The machine's GPUs as it lists them: one it no longer lists was removed, not lost.
      const listed = new Set(d.gpus.map((g) => g.index));
      for (const index of [...host.known.keys()]) if (!listed.has(index)) host.known.delete(index);
      for (const g of d.gpus) if (!host.known.has(g.index) && g.index <= MAX_GPU_INDEX) host.known.set(g.index, { uuid: g.uuid, name: g.name });
    }
  }

  private closeHost(name: string, host: HostUsage, closeBefore: number): Rollup[] {
    if (closeBefore <= host.closedBefore) return [];
    // A host silent since its last sample: that sample's span ends before the hours being closed.
    if (!host.credited && host.lastAt !== undefined && host.lastAt + this.span(host) <= host.clock) {
      this.credit(host, host.lastAt, this.span(host));
      host.credited = true;
    }
    const out: Rollup[] = [];
    const hours = [...host.hours.keys()].filter((h) => h < closeBefore).sort((a, b) => a - b);
    for (const hour of hours) {
      out.push(...this.emit(name, host, hour));
      host.hours.delete(hour);
    }
    prune(host, closeBefore);
    host.closedBefore = closeBefore;
    this.stats.rollups += out.length;
    return out;
  }

  private emit(name: string, host: HostUsage, hour: number): Rollup[] {
    const gpus = host.hours.get(hour);
    if (!gpus) return [];
    const end = hour + HOUR_MS;
    const windows = [...host.windows.values()].flatMap((w) => (w.start !== undefined && w.start < end && w.end > hour ? [{ ...w, start: w.start }] : []));
    const maintenance = merge(clip(windows, hour, end));
    const hostFaults = [...(host.faults.get(-1)?.values() ?? [])].filter((f) => f.start < end && f.end > hour);
    const out: Rollup[] = [];
    for (const index of [...gpus.keys()].sort((a, b) => a - b)) {
      const slots = gpus.get(index);
      if (!slots) continue;
      const faults = [...hostFaults, ...[...(host.faults.get(index)?.values() ?? [])].filter((f) => f.start < end && f.end > hour)];
      const broken = merge(clip(faults, hour, end));
      const maint = subtract(maintenance, broken);
      let busy = 0;
      let idle = 0;
      let brokenMs = 0;
      let maintMs = 0;
      for (let m = 0; m < MINUTES_PER_HOUR; m += 1) {
        const present = slots.present[m] ?? 0;
        const lost = slots.lost[m] ?? 0;
        if (present === 0 && lost === 0) continue;
        const from = hour + m * MINUTE_MS;
        const bf = broken.length > 0 ? covered(broken, from, from + MINUTE_MS) / MINUTE_MS : 0;
        const mf = maint.length > 0 ? covered(maint, from, from + MINUTE_MS) / MINUTE_MS : 0;
        brokenMs += lost + present * bf;
        maintMs += present * mf;
        const normal = present * (1 - bf - mf);
        const busyShare = present > 0 ? ((slots.busy[m] ?? 0) / present) * normal : 0;
        busy += busyShare;
        idle += normal - busyShare;
      }
      const minutes = {
        busy: round(busy / MINUTE_MS),
        idle: round(idle / MINUTE_MS),
        broken: round(brokenMs / MINUTE_MS),
        maintenance: round(maintMs / MINUTE_MS),
      };
      const up = round(minutes.busy + minutes.idle + minutes.broken + minutes.maintenance);
      const job = [...slots.jobs.values()].sort((a, b) => b.ms - a.ms)[0];
      const known = host.known.get(index);
      const evidenceAlerts = minutes.broken > 0 ? unique(faults.map((f) => f.fingerprint)) : [];
      const evidenceEvents = minutes.maintenance > 0 ? unique(windows.map((w) => w.eventId)) : [];
      const data: UsageRollupData = {
        gpu: index,
        ...(known?.uuid ? { uuid: known.uuid.slice(0, 128) } : {}),
        hour: new Date(hour).toISOString(),
        minutes: { up, ...minutes },
        busy_threshold_pct: this.threshold,
        evidence: { alerts: evidenceAlerts.slice(0, MAX_USAGE_EVIDENCE), provider_events: evidenceEvents.slice(0, MAX_USAGE_EVIDENCE) },
      };
      out.push(
        newEnvelope({
          type: 'usage.rollup',
          // The same GPU-hour always has the same id: a consumer restarted over the same input dedupes it.
          id: stableId('usage.rollup', name, index, hour),
          host: name,
          source: this.source,
          ts: data.hour,
          labels: rollupLabels(host, known, job),
          data,
        }),
      );
    }
    return out;
  }
}

/** The job a GPU runs: the collector's per-GPU attribution first, the host's labels otherwise. */
function jobOf(gpu: GpuMetrics, labels: Readonly<Record<string, string>>): { job?: string; user?: string } {
  const attribution = gpu.job;
  const job =
    attribution?.job_name ??
    attribution?.job ??
    (attribution?.pod ? `${attribution.namespace ? `${attribution.namespace}/` : ''}${attribution.pod}` : undefined) ??
    labels.job;
  const user = attribution?.job_user ?? labels.user ?? labels.owner;
  return { ...(job !== undefined ? { job } : {}), ...(user !== undefined ? { user } : {}) };
}

function rollupLabels(host: HostUsage, known: GpuKnown | undefined, job: { job?: string; user?: string } | undefined): Record<string, string> {
  const labels = toInertRecord<string>({});
  const set = (key: string, value: string | undefined) => {
    if (value !== undefined && value !== '') labels[key] = value.slice(0, 1024);
  };
  set('provider', host.inventory.provider ?? host.labels.provider);
  set('cluster', host.labels.cluster);
  set('gpu_model', host.inventory.gpu_model ?? known?.name ?? host.labels.gpu_model);
  set('instance_type', host.inventory.instance_type ?? host.labels.instance_type);
  set('instance_id', host.inventory.instance_id ?? host.labels.instance_id);
  set('pricing', host.labels.pricing);
  set('job', job?.job);
  set('user', job?.user);
  return labels;
}

/** Forgets what can no longer touch an open hour: faults and windows that ended before it. */
function prune(host: HostUsage, openFrom: number): void {
  for (const [index, faults] of host.faults) {
    for (const [key, f] of faults) if (f.end <= openFrom) faults.delete(key);
    if (faults.size === 0) host.faults.delete(index);
  }
  for (const [id, w] of host.windows) if (w.end <= openFrom) host.windows.delete(id);
}

/** Drops the entry that ended first (an open one only when every one is open). */
function evictOldest<T extends { end: number }>(map: Map<string, T>): void {
  let oldest: string | undefined;
  let oldestEnd = Number.POSITIVE_INFINITY;
  for (const [key, v] of map) {
    const rank = v.end === OPEN ? Number.MAX_VALUE : v.end;
    if (oldest === undefined || rank < oldestEnd) {
      oldest = key;
      oldestEnd = rank;
    }
  }
  if (oldest !== undefined) map.delete(oldest);
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function round(minutes: number): number {
  return Math.round(minutes * 1000) / 1000;
}
