import { MAX_ACKNOWLEDGEMENT_TEXT_LENGTH, type AcknowledgementData, type Pager } from '@gpualert/schema';

/** What a pager's webhook comes to: an acknowledgement (and when), something gpualert does not record, or a body that is not the pager's. */
export type PagerReading =
  | { readonly kind: 'acknowledgement'; readonly data: AcknowledgementData; readonly at?: number }
  | { readonly kind: 'ignored'; readonly reason: string }
  | { readonly kind: 'invalid'; readonly field: string; readonly message: string };

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v.slice(0, MAX_ACKNOWLEDGEMENT_TEXT_LENGTH) : undefined);
const at = (v: unknown): number | undefined => {
  const ms = typeof v === 'string' ? Date.parse(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(ms) ? ms : undefined;
};

/** PagerDuty v3 event types gpualert records, and what each says of the page. */
const PAGERDUTY_ACTIONS: ReadonlyMap<string, AcknowledgementData['action']> = new Map([
  ['incident.acknowledged', 'acknowledged'],
  ['incident.unacknowledged', 'unacknowledged'],
  ['incident.resolved', 'resolved'],
  ['incident.reassigned', 'reassigned'],
  ['incident.escalated', 'escalated'],
]);

/** Opsgenie webhook actions gpualert records. */
const OPSGENIE_ACTIONS: ReadonlyMap<string, AcknowledgementData['action']> = new Map([
  ['Acknowledge', 'acknowledged'],
  ['UnAcknowledge', 'unacknowledged'],
  ['Close', 'resolved'],
  ['AssignOwnership', 'reassigned'],
  ['Escalate', 'escalated'],
]);

/**
 * A PagerDuty v3 webhook (`{ event: { id, event_type, occurred_at, agent, data: incident } }`):
 * the incident's `incident_key` is the dedup key gpualert sent, the alert's fingerprint; `agent`
 * is who did it. Other event types, and incidents gpualert did not open, are ignored.
 */
export function readPagerDuty(payload: unknown): PagerReading {
  const event = isRecord(payload) ? payload.event : undefined;
  if (!isRecord(event)) return { kind: 'invalid', field: 'event', message: 'event: expected a PagerDuty v3 webhook ({ "event": { … } })' };
  const type = event.event_type;
  if (typeof type !== 'string') return { kind: 'invalid', field: 'event.event_type', message: 'event.event_type: expected a string' };
  const action = PAGERDUTY_ACTIONS.get(type);
  if (!action) return { kind: 'ignored', reason: `event type ${type.slice(0, 100)} is not one gpualert records` };
  const id = text(event.id);
  if (!id) return { kind: 'invalid', field: 'event.id', message: 'event.id: expected the event id' };
  const incident = event.data;
  if (!isRecord(incident)) return { kind: 'invalid', field: 'event.data', message: 'event.data: expected the incident' };
  const fingerprint = text(incident.incident_key);
  if (!fingerprint) return { kind: 'ignored', reason: 'the incident has no incident_key: gpualert did not open it' };
  const agent = isRecord(event.agent) ? text(event.agent.summary) : undefined;
  const data: AcknowledgementData = {
    pager: 'pagerduty',
    action,
    fingerprint,
    pager_incident: text(incident.id) ?? '',
    pager_event: id,
    ...(agent ? { by: agent } : {}),
    ...(text(incident.title) ? { title: text(incident.title) } : {}),
    ...(text(incident.html_url) ? { url: text(incident.html_url) } : {}),
  };
  const when = at(event.occurred_at);
  return { kind: 'acknowledgement', data, ...(when !== undefined ? { at: when } : {}) };
}

/**
 * An Opsgenie webhook integration's alert action (`{ action, alert: { alertId, alias, username,
 * updatedAt }, source }`): `alias` is the dedup key gpualert sent, the alert's fingerprint.
 * `updatedAt` is in nanoseconds; the body has no event id, so the alert, the action and that time
 * make one.
 */
export function readOpsgenie(payload: unknown): PagerReading {
  if (!isRecord(payload)) return { kind: 'invalid', field: '', message: 'expected an Opsgenie alert action ({ "action": …, "alert": { … } })' };
  const name = payload.action;
  if (typeof name !== 'string') return { kind: 'invalid', field: 'action', message: 'action: expected a string' };
  const action = OPSGENIE_ACTIONS.get(name);
  if (!action) return { kind: 'ignored', reason: `action ${name.slice(0, 100)} is not one gpualert records` };
  const alert = payload.alert;
  if (!isRecord(alert)) return { kind: 'invalid', field: 'alert', message: 'alert: expected the alert' };
  const alertId = text(alert.alertId);
  if (!alertId) return { kind: 'invalid', field: 'alert.alertId', message: 'alert.alertId: expected the alert id' };
  const fingerprint = text(alert.alias);
  if (!fingerprint) return { kind: 'ignored', reason: 'the alert has no alias: gpualert did not open it' };
  const updatedNs = typeof alert.updatedAt === 'number' && Number.isFinite(alert.updatedAt) ? alert.updatedAt : undefined;
  const by = text(alert.username);
  const data: AcknowledgementData = {
    pager: 'opsgenie',
    action,
    fingerprint,
    pager_incident: alertId,
    pager_event: `${alertId}:${name}:${updatedNs ?? ''}`.slice(0, MAX_ACKNOWLEDGEMENT_TEXT_LENGTH),
    ...(by ? { by } : {}),
    ...(text(alert.message) ? { title: text(alert.message) } : {}),
  };
  // Nanoseconds as the docs show them; a sender's milliseconds (13 digits) taken as they are.
  const when = updatedNs === undefined ? undefined : Math.floor(updatedNs > 1e15 ? updatedNs / 1e6 : updatedNs);
  return { kind: 'acknowledgement', data, ...(when !== undefined ? { at: when } : {}) };
}

export const PAGER_READERS: Readonly<Record<Pager, (payload: unknown) => PagerReading>> = { pagerduty: readPagerDuty, opsgenie: readOpsgenie };
