import type { AlertView, Notification } from '../notifier-core.ts';

const REASON: Record<Notification['reason'], string> = {
  first: 'New', new_alerts: 'New alerts', changed: 'Changed', resolved: 'Resolved', repeat: 'Still firing', page: 'Page', page_resolve: 'Resolved',
};

export function worst(notification: Notification): AlertView['severity'] {
  const order = ['info', 'warning', 'error', 'critical'] as const;
  return notification.alerts.reduce<AlertView['severity']>((w, a) => (order.indexOf(a.severity) > order.indexOf(w) ? a.severity : w), 'info');
}

/** `[CRITICAL] gpu-node-002 GPU 3: GPU 3 on gpu-node-002 has disappeared` — severity, host, what happened. */
export function title(notification: Notification): string {
  const first = notification.alerts[0];
  if (!first) return `[${REASON[notification.reason]}] gpualert`;
  const resolved = notification.alerts.every((a) => a.status === 'resolved');
  const more = notification.alerts.length > 1 ? ` (+${notification.alerts.length - 1} more)` : '';
  return `[${resolved ? 'RESOLVED' : worst(notification).toUpperCase()}] ${first.host}${first.gpu !== undefined ? ` GPU ${first.gpu}` : ''}: ${first.summary}${more}`;
}

/** One alert as the person paged needs it: what, where, since when, what to do, the evidence. */
export function alertLines(alert: AlertView): string[] {
  return [
    `${alert.status === 'resolved' ? 'RESOLVED' : alert.severity.toUpperCase()} — ${alert.summary}`,
    `host ${alert.host}${alert.gpu !== undefined ? `, GPU ${alert.gpu}` : ''} · ${alert.category} · since ${alert.startsAt}${alert.endsAt ? ` until ${alert.endsAt}` : ''}${alert.expected ? ' · expected (maintenance window)' : ''}`,
    ...(alert.action && alert.status === 'firing' ? [`action: ${alert.action}`] : []),
    ...(alert.evidence.length > 0 ? [`evidence: ${alert.evidence.slice(0, 5).join(', ')}${alert.evidence.length > 5 ? ` (+${alert.evidence.length - 5})` : ''}`] : []),
    `fingerprint ${alert.fingerprint}`,
  ];
}

export function plainText(notification: Notification): string {
  const header = `${REASON[notification.reason]}: ${notification.alerts.length} alert${notification.alerts.length === 1 ? '' : 's'}${notification.firing > notification.alerts.length ? `, ${notification.firing} firing in the group` : ''}`;
  return [header, '', ...notification.alerts.flatMap((a) => [...alertLines(a), ''])].join('\n').trim();
}

export function markdown(notification: Notification): string {
  return [`**${title(notification)}**`, '', ...notification.alerts.flatMap((a) => [...alertLines(a).map((l, i) => (i === 0 ? `**${l}**` : `> ${l}`)), ''])].join('\n').trim();
}

export function html(notification: Notification): string {
  const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
  return `<h2>${escape(title(notification))}</h2>${notification.alerts.map((a) => `<p>${alertLines(a).map((l, i) => (i === 0 ? `<b>${escape(l)}</b>` : escape(l))).join('<br>')}</p>`).join('')}`;
}
