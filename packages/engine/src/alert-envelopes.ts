import { inertRecord, newEnvelope, stableId, type EnvelopeOf } from '@gpualert/schema';
import type { Transition } from './conditions.ts';
import type { HostState } from './engine-state.ts';

export const ENGINE_SOURCE = 'engine/0.1.0';

/** Transitions as `alert` envelopes; the id is deterministic, so a replayed transition is the same message. */
export function alertEnvelopes(host: HostState, out: readonly Transition[]): EnvelopeOf<'alert'>[] {
  return out.map((t) =>
    newEnvelope({
      type: 'alert',
      id: stableId(t.data.fingerprint, t.data.status, t.data.severity, t.ts),
      host: host.host,
      source: ENGINE_SOURCE,
      ts: new Date(t.ts).toISOString(),
      labels: t.labels ? withLabels(host.labels, t.labels) : host.labels,
      data: t.data,
    }),
  );
}

/** The host's labels with the alert's own (a job's `job`, `job_user`, `namespace`, `pod`) over them: who runs there is more specific. */
function withLabels(host: Readonly<Record<string, string>>, own: Readonly<Record<string, string>>): Record<string, string> {
  const labels = inertRecord<string>();
  Object.assign(labels, host, own);
  return labels;
}
