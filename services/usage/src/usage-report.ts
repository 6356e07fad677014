import type { EnvelopeOf } from '@gpualert/schema';
import { NO_PRICES, type PriceLookup } from './prices.ts';
import { HOUR_MS } from './rollup-accumulator.ts';

/** What `gpualert report usage` groups by, and the rollup label each reads. */
export const GROUP_BY = ['host', 'cluster', 'provider', 'model', 'job', 'user'] as const;
export type GroupBy = (typeof GROUP_BY)[number];
const LABEL_OF: Record<Exclude<GroupBy, 'host'>, string> = { cluster: 'cluster', provider: 'provider', model: 'gpu_model', job: 'job', user: 'user' };

/** A group without the label it is grouped by. */
export const NO_LABEL = '(none)';
/** Entries in each "top idle" list. */
export const TOP_IDLE = 10;

export interface StateHours {
  up: number;
  busy: number;
  idle: number;
  broken: number;
  maintenance: number;
}

export interface UsageGroup {
  readonly key: string;
  /** Distinct GPUs (host and index) in the group. */
  gpus: number;
  readonly hours: StateHours;
  /** Up hours priced; `unpriced_hours` had no matching price. */
  cost: number;
  idle_cost: number;
  broken_cost: number;
  unpriced_hours: number;
}

export interface TopIdle {
  readonly key: string;
  readonly user?: string;
  idle_hours: number;
  idle_cost: number;
}

/** The hours of one host in one hour: what reconciliation compares a bill with. */
export interface HostHour {
  /** The most minutes any of its GPUs was up: the minutes the machine was seen. */
  up: number;
  /** The most minutes any GPU was broken, and in maintenance. */
  broken: number;
  maintenance: number;
  /** GPU-minutes broken, summed over its GPUs. */
  broken_gpu_minutes: number;
  gpus: number;
  readonly alerts: Set<string>;
  readonly events: Set<string>;
}

export interface HostHours {
  readonly host: string;
  instanceId?: string;
  provider?: string;
  gpus: number;
  readonly hours: Map<number, HostHour>;
}

export interface UsageReport {
  readonly from: string;
  readonly to: string;
  readonly by: GroupBy;
  readonly currency: string;
  /** GPU-hours counted: one rollup each. */
  readonly rollups: number;
  /** Rollups of a GPU-hour already counted (the same rollup read again, or another for that GPU and hour): not counted. */
  readonly duplicates: number;
  readonly busy_threshold_pct: number[];
  readonly total: UsageGroup;
  readonly groups: UsageGroup[];
  readonly top_idle_hosts: TopIdle[];
  readonly top_idle_jobs: TopIdle[];
  /** Hours by state per bucket (an hour for ranges up to 3 days, else a day), for the chart. */
  readonly bucket: 'hour' | 'day';
  readonly series: { readonly start: string; readonly hours: StateHours }[];
}

const zero = (): StateHours => ({ up: 0, busy: 0, idle: 0, broken: 0, maintenance: 0 });
const newGroup = (key: string): UsageGroup => ({ key, gpus: 0, hours: zero(), cost: 0, idle_cost: 0, broken_cost: 0, unpriced_hours: 0 });

/**
 * A streaming report: rollups go in one at a time (a month of a fleet never sits in memory), the
 * report comes out. Memory grows with the groups, hosts and chart buckets, and by one number per
 * GPU-hour counted (what tells a duplicate), not with the rollups' text.
 *
 * A GPU-hour (host, GPU index, hour) is counted once: Kafka delivers at least once, a recording may
 * be concatenated twice, and a rollup's id is the hash of that same triple (`stableId`), so keying
 * on the triple catches every copy a rollup id would, and also a second producer's rollup for the
 * same GPU-hour (a GPU cannot be up 120 minutes in an hour). The first one read wins: a report
 * streams, and a later copy is most often the same rollup again; the others are counted in
 * `duplicates`.
 */
export class UsageReportBuilder {
  private readonly groups = new Map<string, UsageGroup>();
  private readonly gpusPerGroup = new Map<string, Set<string>>();
  private readonly total = newGroup('total');
  private readonly allGpus = new Set<string>();
  private readonly idleHosts = new Map<string, TopIdle>();
  private readonly idleJobs = new Map<string, TopIdle>();
  private readonly series = new Map<number, StateHours>();
  private readonly thresholds = new Set<number>();
  readonly hostHours = new Map<string, HostHours>();
  private count = 0;
  private duplicates = 0;
  /** The hours counted per GPU (`host NUL index`), as hour numbers since the epoch: at most one per rollup read. */
  private readonly counted = new Map<string, Set<number>>();
  private readonly bucketMs: number;

  constructor(
    private readonly range: { from: number; to: number; by: GroupBy },
    private readonly prices: PriceLookup = NO_PRICES,
    /** Keep per-host hours for reconciliation with a bill. */
    private readonly keepHostHours = false,
  ) {
    this.bucketMs = range.to - range.from > 3 * 24 * HOUR_MS ? 24 * HOUR_MS : HOUR_MS;
  }

  /** Whether the rollup is in the range and its GPU-hour was not counted yet (and now is). */
  add(rollup: EnvelopeOf<'usage.rollup'>): boolean {
    const hour = Date.parse(rollup.data.hour);
    if (!(hour >= this.range.from && hour < this.range.to)) return false;
    const gpu = `${rollup.host}\u0000${rollup.data.gpu}`;
    let hours = this.counted.get(gpu);
    if (!hours) this.counted.set(gpu, (hours = new Set()));
    const hourNumber = Math.floor(hour / HOUR_MS);
    if (hours.has(hourNumber)) {
      this.duplicates += 1;
      return false;
    }
    hours.add(hourNumber);
    this.count += 1;
    const m = rollup.data.minutes;
    const h: StateHours = { up: m.up / 60, busy: m.busy / 60, idle: m.idle / 60, broken: m.broken / 60, maintenance: m.maintenance / 60 };
    const labels = rollup.labels;
    const rate = this.prices.rate(labels);
    const key = this.range.by === 'host' ? rollup.host : (labels[LABEL_OF[this.range.by]] ?? NO_LABEL);
    let group = this.groups.get(key);
    if (!group) {
      this.groups.set(key, (group = newGroup(key)));
      this.gpusPerGroup.set(key, new Set());
    }
    for (const g of [group, this.total]) accumulate(g, h, rate);
    let seen = this.gpusPerGroup.get(key);
    if (!seen) this.gpusPerGroup.set(key, (seen = new Set()));
    if (!seen.has(gpu)) {
      seen.add(gpu);
      group.gpus += 1;
    }
    if (!this.allGpus.has(gpu)) {
      this.allGpus.add(gpu);
      this.total.gpus += 1;
    }
    this.thresholds.add(rollup.data.busy_threshold_pct);
    if (h.idle > 0) {
      bump(this.idleHosts, rollup.host, undefined, h.idle, rate);
      if (labels.job !== undefined) bump(this.idleJobs, labels.job, labels.user, h.idle, rate);
    }
    const bucket = Math.floor((hour - this.range.from) / this.bucketMs) * this.bucketMs + this.range.from;
    let b = this.series.get(bucket);
    if (!b) this.series.set(bucket, (b = zero()));
    add(b, h);
    if (this.keepHostHours) this.hostHour(rollup, hour);
    return true;
  }

  private hostHour(rollup: EnvelopeOf<'usage.rollup'>, hour: number): void {
    let host = this.hostHours.get(rollup.host);
    if (!host) this.hostHours.set(rollup.host, (host = { host: rollup.host, gpus: 0, hours: new Map() }));
    if (rollup.labels.instance_id) host.instanceId = rollup.labels.instance_id;
    if (rollup.labels.provider) host.provider = rollup.labels.provider;
    let h = host.hours.get(hour);
    if (!h) host.hours.set(hour, (h = { up: 0, broken: 0, maintenance: 0, broken_gpu_minutes: 0, gpus: 0, alerts: new Set(), events: new Set() }));
    const m = rollup.data.minutes;
    h.up = Math.max(h.up, m.up);
    h.broken = Math.max(h.broken, m.broken);
    h.maintenance = Math.max(h.maintenance, m.maintenance);
    h.broken_gpu_minutes += m.broken;
    h.gpus += 1;
    host.gpus = Math.max(host.gpus, h.gpus);
    for (const a of rollup.data.evidence.alerts) if (h.alerts.size < 64) h.alerts.add(a);
    for (const e of rollup.data.evidence.provider_events) if (h.events.size < 64) h.events.add(e);
  }

  build(): UsageReport {
    const groups = [...this.groups.values()].sort((a, b) => b.hours.up - a.hours.up || a.key.localeCompare(b.key)).map(rounded);
    const top = (m: Map<string, TopIdle>) =>
      [...m.values()]
        .sort((a, b) => b.idle_hours - a.idle_hours || a.key.localeCompare(b.key))
        .slice(0, TOP_IDLE)
        .map((t) => ({ ...t, idle_hours: r3(t.idle_hours), idle_cost: r2(t.idle_cost) }));
    return {
      from: new Date(this.range.from).toISOString(),
      to: new Date(this.range.to).toISOString(),
      by: this.range.by,
      currency: this.prices.currency,
      rollups: this.count,
      duplicates: this.duplicates,
      busy_threshold_pct: [...this.thresholds].sort((a, b) => a - b),
      total: rounded(this.total),
      groups,
      top_idle_hosts: top(this.idleHosts),
      top_idle_jobs: top(this.idleJobs),
      bucket: this.bucketMs === HOUR_MS ? 'hour' : 'day',
      series: [...this.series.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([start, hours]) => ({ start: new Date(start).toISOString(), hours: roundHours(hours) })),
    };
  }
}

function accumulate(g: UsageGroup, h: StateHours, rate: number | undefined): void {
  add(g.hours, h);
  if (rate === undefined) {
    g.unpriced_hours += h.up;
    return;
  }
  g.cost += h.up * rate;
  g.idle_cost += h.idle * rate;
  g.broken_cost += h.broken * rate;
}

function add(into: StateHours, h: StateHours): void {
  into.up += h.up;
  into.busy += h.busy;
  into.idle += h.idle;
  into.broken += h.broken;
  into.maintenance += h.maintenance;
}

function bump(map: Map<string, TopIdle>, key: string, user: string | undefined, idle: number, rate: number | undefined): void {
  const id = `${key}\u0000${user ?? ''}`;
  let t = map.get(id);
  if (!t) map.set(id, (t = { key, ...(user !== undefined ? { user } : {}), idle_hours: 0, idle_cost: 0 }));
  t.idle_hours += idle;
  t.idle_cost += idle * (rate ?? 0);
}

const r3 = (v: number) => Math.round(v * 1000) / 1000;
const r2 = (v: number) => Math.round(v * 100) / 100;
const roundHours = (h: StateHours): StateHours => ({ up: r3(h.up), busy: r3(h.busy), idle: r3(h.idle), broken: r3(h.broken), maintenance: r3(h.maintenance) });
const rounded = (g: UsageGroup): UsageGroup => ({
  ...g,
  hours: roundHours(g.hours),
  cost: r2(g.cost),
  idle_cost: r2(g.idle_cost),
  broken_cost: r2(g.broken_cost),
  unpriced_hours: r3(g.unpriced_hours),
});
