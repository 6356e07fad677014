import type { AlertBook, AlertFacts } from './alert-book.ts';
import { instanceKey, type Bill, type BillError } from './bill-parsers.ts';
import { HOUR_MS } from './rollup-accumulator.ts';
import type { HostHours } from './usage-report.ts';

/** Evidence ids and bill rows named per instance: enough for a support case, bounded. */
export const MAX_EVIDENCE_PER_INSTANCE = 50;

export interface InstanceReconciliation {
  readonly instance: string;
  readonly host: string;
  billed_hours: number;
  /** Hours gpualert saw the machine (any GPU up) in the range. */
  seen_hours: number;
  /** Billed hours with nothing seen in them: the machine was billed while gpualert did not hear from it. */
  billed_unseen_hours: number;
  billed_cost: number;
  /** Billed hours while at least one of its GPUs was broken, and what they cost pro rata. */
  billed_broken_hours: number;
  broken_cost: number;
  /** Billed hours inside a provider maintenance window (and not broken). */
  billed_maintenance_hours: number;
  maintenance_cost: number;
  /** Fingerprints of the alerts behind the broken hours; `gpualert timeline --incident FP` tells each story. */
  readonly broken_alerts: string[];
  /** Provider event ids of the maintenance windows. */
  readonly maintenance_events: string[];
  /** The bill rows (`file:line`) of the broken and maintenance hours. */
  readonly bill_rows: string[];
}

export interface Reconciliation {
  readonly from: string;
  readonly to: string;
  readonly instances: InstanceReconciliation[];
  /** Billed, never seen by gpualert. */
  readonly orphans: { instance: string; billed_hours: number; billed_cost: number; bill_rows: string[] }[];
  /** Seen, never billed (another account, a bill that does not cover them, or a free ride). */
  readonly unbilled: { host: string; instance?: string; seen_hours: number }[];
  /** What each alert named as evidence was (when the alerts were read with the rollups). */
  readonly alerts: AlertFacts[];
  readonly bill_lines: number;
  readonly other_rows: number;
  readonly errors: BillError[];
  readonly error_count: number;
}

/** A bill against what gpualert saw: per instance, per billed row, hour by hour. */
export function reconcile(bill: Bill, hosts: ReadonlyMap<string, HostHours>, range: { from: number; to: number }, book?: AlertBook): Reconciliation {
  const byKey = new Map<string, HostHours>();
  for (const host of hosts.values()) {
    byKey.set(instanceKey(host.host), host);
    if (host.instanceId) byKey.set(instanceKey(host.instanceId), host);
  }
  const instances = new Map<string, InstanceReconciliation>();
  const orphans = new Map<string, Reconciliation['orphans'][number]>();
  const billedHosts = new Set<string>();
  let used = 0;
  for (const line of bill.lines) {
    if (!(line.start >= range.from && line.start < range.to)) continue;
    used += 1;
    const host = byKey.get(line.key);
    if (!host) {
      let o = orphans.get(line.key);
      if (!o) orphans.set(line.key, (o = { instance: line.instance, billed_hours: 0, billed_cost: 0, bill_rows: [] }));
      o.billed_hours += line.hours;
      o.billed_cost += line.cost ?? 0;
      if (o.bill_rows.length < MAX_EVIDENCE_PER_INSTANCE) o.bill_rows.push(line.ref);
      continue;
    }
    billedHosts.add(host.host);
    let r = instances.get(host.host);
    if (!r) {
      instances.set(
        host.host,
        (r = {
          instance: line.instance,
          host: host.host,
          billed_hours: 0,
          seen_hours: seenHours(host, range),
          billed_unseen_hours: 0,
          billed_cost: 0,
          billed_broken_hours: 0,
          broken_cost: 0,
          billed_maintenance_hours: 0,
          maintenance_cost: 0,
          broken_alerts: [],
          maintenance_events: [],
          bill_rows: [],
        }),
      );
    }
    // GCP bills GPU-seconds: over the machine's GPUs, that is instance time.
    const hours = line.gpu_seconds !== undefined && host.gpus > 0 ? Math.min(line.hours, line.gpu_seconds / 3600 / host.gpus) : line.hours;
    const costPerHour = line.cost !== undefined && hours > 0 ? line.cost / hours : 0;
    let seen = 0;
    let broken = 0;
    let maintenance = 0;
    const alerts = new Set<string>();
    const events = new Set<string>();
    for (let hour = Math.floor(line.start / HOUR_MS) * HOUR_MS; hour < line.end; hour += HOUR_MS) {
      const h = host.hours.get(hour);
      if (!h) continue;
      const share = (Math.min(line.end, hour + HOUR_MS) - Math.max(line.start, hour)) / HOUR_MS;
      seen += (h.up / 60) * share;
      broken += (h.broken / 60) * share;
      maintenance += (h.maintenance / 60) * share;
      if (h.broken > 0) for (const a of h.alerts) alerts.add(a);
      if (h.maintenance > 0) for (const e of h.events) events.add(e);
    }
    const billedBroken = Math.min(hours, broken);
    const billedMaintenance = Math.min(hours - billedBroken, maintenance);
    r.billed_hours += hours;
    r.billed_cost += line.cost ?? 0;
    r.billed_unseen_hours += Math.max(0, hours - seen);
    r.billed_broken_hours += billedBroken;
    r.broken_cost += billedBroken * costPerHour;
    r.billed_maintenance_hours += billedMaintenance;
    r.maintenance_cost += billedMaintenance * costPerHour;
    pushBounded(r.broken_alerts, alerts);
    pushBounded(r.maintenance_events, events);
    if ((billedBroken > 0 || billedMaintenance > 0) && r.bill_rows.length < MAX_EVIDENCE_PER_INSTANCE) r.bill_rows.push(line.ref);
  }
  const unbilled = [...hosts.values()]
    .filter((h) => !billedHosts.has(h.host))
    .map((h) => ({
      host: h.host,
      ...(h.instanceId ? { instance: h.instanceId } : {}),
      seen_hours: r3(seenHours(h, range)),
    }))
    .filter((u) => u.seen_hours > 0)
    .sort((a, b) => b.seen_hours - a.seen_hours || a.host.localeCompare(b.host));
  const named = [...new Set([...instances.values()].flatMap((i) => i.broken_alerts))];
  const alerts = book ? named.map((fp) => book.get(fp)).filter((a): a is AlertFacts => a !== undefined) : [];
  return {
    from: new Date(range.from).toISOString(),
    to: new Date(range.to).toISOString(),
    instances: [...instances.values()].sort((a, b) => b.billed_broken_hours - a.billed_broken_hours || a.host.localeCompare(b.host)).map(roundInstance),
    orphans: [...orphans.values()]
      .sort((a, b) => b.billed_hours - a.billed_hours)
      .map((o) => ({ ...o, billed_hours: r3(o.billed_hours), billed_cost: r2(o.billed_cost) })),
    unbilled,
    alerts,
    bill_lines: used,
    other_rows: bill.other_rows,
    errors: bill.errors,
    error_count: bill.error_count,
  };
}

function seenHours(host: HostHours, range: { from: number; to: number }): number {
  let total = 0;
  for (const [hour, h] of host.hours) if (hour >= range.from && hour < range.to) total += h.up / 60;
  return total;
}

function pushBounded(into: string[], values: Set<string>): void {
  for (const v of values) {
    if (into.length >= MAX_EVIDENCE_PER_INSTANCE) return;
    if (!into.includes(v)) into.push(v);
  }
}

const r3 = (v: number) => Math.round(v * 1000) / 1000;
const r2 = (v: number) => Math.round(v * 100) / 100;
const roundInstance = (r: InstanceReconciliation): InstanceReconciliation => ({
  ...r,
  billed_hours: r3(r.billed_hours),
  seen_hours: r3(r.seen_hours),
  billed_unseen_hours: r3(r.billed_unseen_hours),
  billed_cost: r2(r.billed_cost),
  billed_broken_hours: r3(r.billed_broken_hours),
  broken_cost: r2(r.broken_cost),
  billed_maintenance_hours: r3(r.billed_maintenance_hours),
  maintenance_cost: r2(r.maintenance_cost),
});
