import type { EnvelopeOf } from '@gpualert/schema';

/**
 * The labels a policy matches an alert on: its host labels, then its facts (`host`, `severity`,
 * `category`, `rule`, `fingerprint`, `expected`, `gpu`), and `xid` when the alert is about one
 * Xid (its summary begins `Xid N:`, as the engine writes it). A null-prototype record: a label
 * named `constructor` or `__proto__` is only data.
 */
export function alertFacts(alert: EnvelopeOf<'alert'>): Record<string, string> {
  const facts = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(alert.labels)) if (typeof value === 'string') facts[name] = value;
  const a = alert.data;
  facts.host = alert.host;
  facts.severity = a.severity;
  facts.category = a.category;
  facts.rule = a.rule;
  facts.fingerprint = a.fingerprint;
  facts.expected = a.expected === true ? 'true' : 'false';
  if (a.gpu) facts.gpu = String(a.gpu.index);
  const xid = /^Xid (\d{1,4})\b/.exec(a.summary)?.[1] ?? /\(Xid (\d{1,4})\b/.exec(a.summary)?.[1];
  if (xid !== undefined) facts.xid = xid;
  return facts;
}
