import type { Silence } from '@gpualert/notify';
import { SEVERITIES, type FleetSnapshot, type Severity } from '@gpualert/schema';
import { alertQuery, listAlertsBounded, type AlertQuery, type NotifierView } from '../alertmanager-api.ts';

/** Evidence lines one alert shows in the console; the engine keeps fewer. */
export const MAX_EVIDENCE_SHOWN = 32;
/** Incidents one answer lists (newest first). */
export const MAX_INCIDENTS_SHOWN = 500;

export interface ConsoleAlert {
  readonly fingerprint: string;
  readonly labels: Record<string, string>;
  readonly summary: string;
  readonly description: string;
  readonly evidence: readonly string[];
  readonly startsAt: string;
  readonly state: 'active' | 'suppressed';
  readonly silencedBy: readonly string[];
  readonly inhibitedBy: readonly string[];
  /** The receivers its routes reach (the page groups by them). */
  readonly receivers: readonly string[];
  /** Those of them its silences hold it back from: all of them, or fewer when a silence is for some receivers only (a maintenance window's, the pager). */
  readonly silencedFor: readonly string[];
  readonly incident: string | null;
}

export interface ConsoleIncident {
  readonly id: string;
  readonly host: string;
  readonly severity: Severity;
  /** Its first alert's start (epoch ms): the timeline export begins a little before. */
  readonly since: number;
  /** Its last alert's start (epoch ms): the export ends a while after it. */
  readonly last: number;
  readonly alerts: readonly string[];
}

const everything = alertQuery(new URLSearchParams());
if (typeof everything === 'string') throw new Error(`gpualert bug: the query that asks for every alert is refused: ${everything}`);
const EVERYTHING: AlertQuery = everything;

function severityOf(labels: Readonly<Record<string, string>>): Severity {
  return SEVERITIES.find((s) => s === labels.severity) ?? 'warning';
}

/** The receivers these silences hold an alert back from, of those it goes to. */
function heldFrom(receivers: readonly string[], silences: readonly (Silence | undefined)[]): string[] {
  if (silences.some((s) => s !== undefined && !s.receivers)) return [...receivers];
  return receivers.filter((r) => silences.some((s) => s?.receivers?.includes(r)));
}

/**
 * The console's alert query: `/api/v2/alerts`' own (`filter` as Alertmanager's matchers, the
 * notifier's parser and linear-time regexes), every state shown unless asked; or one line saying
 * which parameter is wrong.
 */
export function consoleAlertQuery(params: URLSearchParams): AlertQuery | string {
  return params.size === 0 ? EVERYTHING : alertQuery(params);
}

/**
 * The firing alerts as the notifier holds them (Alertmanager's alert list, the same function
 * `/api/v2/alerts` answers with, filtered as it filters), each with its evidence and receivers,
 * and grouped into incidents where the fleet snapshot names one for the alert.
 */
export function consoleAlerts(
  view: NotifierView,
  snapshot: FleetSnapshot | undefined,
  now: number,
  query: AlertQuery = EVERYTHING,
): { alerts: ConsoleAlert[]; incidents: ConsoleIncident[]; omitted: number } {
  const { alerts, omitted } = listAlertsBounded(view, query, now);
  const { about, silences } = view.state();
  const incidentOf = new Map<string, string>();
  for (const host of snapshot?.hosts ?? []) {
    for (const a of host.alerts) if (a.incident) incidentOf.set(a.fingerprint, a.incident);
    for (const gpu of host.gpus) for (const a of gpu.alerts) if (a.incident) incidentOf.set(a.fingerprint, a.incident);
  }
  const incidents = new Map<string, { id: string; host: string; severity: Severity; since: number; last: number; alerts: string[] }>();
  const out: ConsoleAlert[] = alerts.map((alert) => {
    const known = Object.hasOwn(about, alert.fingerprint) ? about[alert.fingerprint] : undefined;
    const incident = incidentOf.get(alert.fingerprint) ?? null;
    if (incident !== null) {
      const since = Date.parse(alert.startsAt);
      const entry = incidents.get(incident) ?? { id: incident, host: alert.labels.host ?? '', severity: 'info' as Severity, since, last: since, alerts: [] };
      incidents.set(incident, entry);
      entry.alerts.push(alert.fingerprint);
      if (SEVERITIES.indexOf(severityOf(alert.labels)) > SEVERITIES.indexOf(entry.severity)) entry.severity = severityOf(alert.labels);
      if (since < entry.since) entry.since = since;
      if (since > entry.last) entry.last = since;
    }
    return {
      fingerprint: alert.fingerprint,
      labels: alert.labels,
      summary: alert.annotations.summary ?? known?.summary ?? '',
      description: alert.annotations.description ?? known?.description ?? '',
      evidence: (known?.evidence ?? []).slice(0, MAX_EVIDENCE_SHOWN),
      startsAt: alert.startsAt,
      state: alert.status.state,
      silencedBy: alert.status.silencedBy,
      inhibitedBy: alert.status.inhibitedBy,
      receivers: alert.receivers.map((r) => r.name),
      silencedFor: heldFrom(
        alert.receivers.map((r) => r.name),
        alert.status.silencedBy.map((id) => (Object.hasOwn(silences, id) ? silences[id] : undefined)),
      ),
      incident,
    };
  });
  const listed = [...incidents.values()].sort((a, b) => b.since - a.since).slice(0, MAX_INCIDENTS_SHOWN);
  return { alerts: out, incidents: listed, omitted };
}
