import { inertRecord, type EnvelopeOf } from '@gpualert/schema';

/** The source of alerts pushed through Alertmanager's API (Prometheus, vmalert, Grafana). */
export const ALERTMANAGER_API_SOURCE = 'alertmanager-api';

/**
 * The labels routes, silences and inhibitions match on: the alert's facts and the host's labels.
 * An inert record (inherits nothing): a label named `constructor` or `__proto__` is data, never
 * inherited. Not Object.create(null), which V8 keeps in dictionary mode: 480 bytes a label set of
 * six against about 100, and the notifier holds several for each firing alert.
 */
export function alertLabels(alert: EnvelopeOf<'alert'>): Record<string, string> {
  const a = alert.data;
  const labels = inertRecord<string>();
  for (const [name, value] of Object.entries(alert.labels ?? {})) if (typeof value === 'string') labels[name] = value;
  // A pushed alert matches, groups and shows on its own labels, as in Alertmanager: an added
  // `severity` or `fingerprint` would change what `severity="page"` or `group_by: ['...']` mean.
  if (alert.source === ALERTMANAGER_API_SOURCE) return labels;
  labels.host = alert.host;
  labels.severity = a.severity;
  labels.category = a.category;
  labels.rule = a.rule;
  labels.fingerprint = a.fingerprint;
  labels.expected = a.expected ? 'true' : 'false';
  if (a.gpu) labels.gpu = String(a.gpu.index);
  if (a.templates?.[0]) labels.template = a.templates[0];
  return labels;
}
