import { GoKV, GoList, GoStruct, GoTime, byteOrder, type Value } from './go-template-values.ts';
import type { AlertView, Notification } from './notifier-types.ts';

/** Go's zero time, which Alertmanager's firing alerts carry as EndsAt in a notification. */
const GO_ZERO_MS = -62135596800000;

/** An alert's annotations: all it carries, or (an engine alert) its summary and description. */
export function annotationsOf(alert: AlertView): Readonly<Record<string, string>> {
  if (alert.annotations) return alert.annotations;
  return { ...(alert.summary ? { summary: alert.summary } : {}), ...(alert.description ? { description: alert.description } : {}) };
}

function kv(record: Readonly<Record<string, string>>): GoKV {
  return new GoKV(new Map(Object.entries(record)));
}

/** Alertmanager's order for a message's alerts (types.AlertSlice): by job, then instance, then the label sets. */
function alertOrder(a: AlertView, b: AlertView): number {
  for (const key of ['job', 'instance']) {
    const x = Object.hasOwn(a.labels, key) ? a.labels[key] : undefined;
    const y = Object.hasOwn(b.labels, key) ? b.labels[key] : undefined;
    if (x === undefined && y === undefined) continue;
    if (x === undefined) return 1;
    if (y === undefined) return -1;
    if (x !== y) return byteOrder(x, y);
  }
  const ka = Object.keys(a.labels).sort(byteOrder);
  const kb = Object.keys(b.labels).sort(byteOrder);
  for (let i = 0; ; i += 1) {
    const x = ka[i];
    const y = kb[i];
    if (x === undefined || y === undefined) break;
    if (x !== y) return byteOrder(x, y);
    const va = a.labels[x];
    const vb = b.labels[x];
    if (va !== undefined && vb !== undefined && va !== vb) return byteOrder(va, vb);
  }
  return ka.length - kb.length;
}

function common(maps: readonly Readonly<Record<string, string>>[]): Record<string, string> {
  // A null-prototype map: a label named `constructor` or `__proto__` is a plain key.
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  const [first, ...rest] = maps;
  for (const [k, v] of Object.entries(first ?? {})) if (rest.every((m) => Object.hasOwn(m, k) && m[k] === v)) out[k] = v;
  return out;
}

/** Go's regexp.QuoteMeta: Alertmanager quotes the receiver's name in its data. */
function quoteMeta(s: string): string {
  return s.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}

/**
 * Alertmanager's template data (template.Data) for one message: the receiver, the status, the
 * group's alerts (as its webhook shows them), group labels, common labels and annotations.
 */
export function templateData(notification: Notification, externalURL = ''): Value {
  const group = notification.alertmanager;
  const alerts = [...(group?.alerts ?? notification.alerts)].sort(alertOrder);
  const items = alerts.map(
    (a) =>
      new GoStruct(
        'Alert',
        new Map<string, Value>([
          ['Status', a.status],
          ['Labels', kv(a.labels)],
          ['Annotations', kv(annotationsOf(a))],
          ['StartsAt', new GoTime(Date.parse(a.startsAt))],
          ['EndsAt', new GoTime(a.status === 'resolved' ? Date.parse(a.endsAt ?? a.startsAt) : GO_ZERO_MS)],
          ['GeneratorURL', a.evidence.find((e) => /^https?:\/\//.test(e)) ?? ''],
          ['Fingerprint', a.fingerprint],
        ]),
      ),
  );
  return new GoStruct(
    'Data',
    new Map<string, Value>([
      ['Receiver', quoteMeta(group?.receiver ?? notification.receiver)],
      ['Status', alerts.some((a) => a.status === 'firing') ? 'firing' : 'resolved'],
      ['Alerts', new GoList('Alerts', items)],
      ['GroupLabels', kv(group?.groupLabels ?? {})],
      ['CommonLabels', kv(common(alerts.map((a) => a.labels)))],
      ['CommonAnnotations', kv(common(alerts.map(annotationsOf)))],
      ['ExternalURL', externalURL],
    ]),
  );
}
