import type { EnvelopeOf } from '@gpualert/schema';

/** The labels routes, silences and inhibitions match on: the alert's facts and the host's labels. */
export function alertLabels(alert: EnvelopeOf<'alert'>): Record<string, string> {
  const a = alert.data;
  return {
    ...alert.labels,
    host: alert.host,
    severity: a.severity,
    category: a.category,
    rule: a.rule,
    fingerprint: a.fingerprint,
    expected: a.expected ? 'true' : 'false',
    ...(a.gpu ? { gpu: String(a.gpu.index) } : {}),
    ...(a.templates?.[0] ? { template: a.templates[0] } : {}),
  };
}
