import { newEnvelope, stableId, type EnvelopeOf } from '@gpualert/schema';
import { NO_PRICES, type PriceLookup } from './prices.ts';
import { HOUR_MS } from './rollup-accumulator.ts';

/**
 * The daily idle-cost digest: once a UTC day's last hour is rolled up, one `alert` envelope that
 * says what idle GPUs cost that day, fed by the rollups and naming the idle-cost rule's alerts of
 * the day as evidence. It goes to `gpualert.alerts` and is routed like any alert (severity
 * warning: chat by default); `ends_at` the next day's end, so it ages out by itself.
 */

export const DIGEST_HOST = 'gpualert';
export const DIGEST_RULE = 'idle-cost-digest';
const DAY_MS = 24 * HOUR_MS;
/** Days held open at once: a day closes when its last hour does, so two suffice; more is a clock gone wrong. */
const MAX_OPEN_DAYS = 3;
/** Hosts named in a digest, and idle-cost alerts kept per day as evidence. */
const TOP_HOSTS = 5;
const MAX_DIGEST_EVIDENCE = 100;

interface Day {
  up: number;
  idle: number;
  idleCost: number;
  readonly hosts: Map<string, number>;
  readonly alerts: Set<string>;
}

export class IdleDigest {
  private readonly days = new Map<number, Day>();
  private readonly sent = new Set<number>();

  constructor(
    private readonly prices: PriceLookup = NO_PRICES,
    private readonly source = 'usage/0.1.0',
  ) {}

  private day(at: number): Day | undefined {
    const start = Math.floor(at / DAY_MS) * DAY_MS;
    if (this.sent.has(start)) return undefined;
    let day = this.days.get(start);
    if (!day) {
      if (this.days.size >= MAX_OPEN_DAYS) this.days.delete(Math.min(...this.days.keys()));
      this.days.set(start, (day = { up: 0, idle: 0, idleCost: 0, hosts: new Map(), alerts: new Set() }));
    }
    return day;
  }

  /** An alert of the existing idle-cost rule: evidence for its day. */
  alert(alert: EnvelopeOf<'alert'>): void {
    if (alert.data.category !== 'idle_cost' || alert.data.status !== 'firing' || alert.data.rule === DIGEST_RULE) return;
    const day = this.day(Date.parse(alert.data.starts_at));
    if (day && day.alerts.size < MAX_DIGEST_EVIDENCE) day.alerts.add(alert.data.fingerprint);
  }

  /**
   * Rollups as they close; returns the digests of the days they complete. Hosts close their hours
   * by their own clocks, so a day is complete once a rollup an hour into the next day has come:
   * a host whose rollups come later than that is left out of the digest (the report counts it).
   */
  rollups(rollups: readonly EnvelopeOf<'usage.rollup'>[]): EnvelopeOf<'alert'>[] {
    const closing = new Set<number>();
    for (const r of rollups) {
      const hour = Date.parse(r.data.hour);
      const day = this.day(hour);
      if (!day) continue;
      const m = r.data.minutes;
      day.up += m.up / 60;
      day.idle += m.idle / 60;
      day.idleCost += (m.idle / 60) * (this.prices.rate(r.labels) ?? 0);
      if (m.idle > 0 && (day.hosts.has(r.host) || day.hosts.size < 100_000)) day.hosts.set(r.host, (day.hosts.get(r.host) ?? 0) + m.idle / 60);
      for (const start of this.days.keys()) if (hour >= start + DAY_MS + HOUR_MS) closing.add(start);
    }
    const out: EnvelopeOf<'alert'>[] = [];
    for (const start of [...closing].sort((a, b) => a - b)) {
      const day = this.days.get(start);
      this.days.delete(start);
      this.sent.add(start);
      if (this.sent.size > MAX_OPEN_DAYS * 10) this.sent.delete(Math.min(...this.sent));
      if (day && day.idle > 0) out.push(this.digest(start, day));
    }
    return out;
  }

  private digest(start: number, day: Day): EnvelopeOf<'alert'> {
    const date = new Date(start).toISOString().slice(0, 10);
    const at = new Date(start + DAY_MS).toISOString();
    const top = [...day.hosts.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP_HOSTS);
    const cost = this.prices === NO_PRICES ? '' : ` costing ${day.idleCost.toFixed(2)} ${this.prices.currency}`;
    return newEnvelope({
      type: 'alert',
      id: stableId('idle-digest', date),
      host: DIGEST_HOST,
      source: this.source,
      ts: at,
      labels: { digest: 'idle-cost', day: date },
      data: {
        fingerprint: stableId('idle-digest-fp', date).replace(/-/g, '').slice(0, 16),
        status: 'firing',
        severity: 'warning',
        category: 'idle_cost',
        rule: DIGEST_RULE,
        summary: `Idle GPUs on ${date}: ${day.idle.toFixed(1)} of ${day.up.toFixed(1)} GPU-hours up were idle${cost}`,
        description: `Most idle: ${top.map(([host, hours]) => `${host} ${hours.toFixed(1)} h`).join(', ')}. ${day.alerts.size} idle-cost alerts fired that day. gpualert report usage --from ${date}T00:00:00Z --to ${at} --by host has the detail.`,
        action: 'Release idle instances or schedule work on them; the report lists hosts and jobs by idle cost.',
        starts_at: at,
        ends_at: new Date(start + 2 * DAY_MS).toISOString(),
        evidence: [...day.alerts],
        value: Math.round(day.idle * 100) / 100,
      },
    });
  }
}
