import type { Batch } from '@gpualert/bus';
import type { HostState } from '@gpualert/engine';
import { TOPICS } from '@gpualert/schema';

/** The topics of the fast lane: faults and notices. */
const FAST_TOPICS: ReadonlySet<string> = new Set([TOPICS.kernelEvents, TOPICS.providerEvents, TOPICS.bmcEvents]);

/**
 * The fast lane: a batch of kernel events, provider notices or BMC events goes before the sample
 * batches waiting when each of its hosts is live, i.e. judged from its samples up to about the
 * event's time (within two of its sample intervals). Any other batch keeps its place: a host's
 * first fault waits for its first samples (which map its PCI addresses to GPUs), and in a backlog
 * a fault waits for the samples before it, so the host is judged in the order things happened.
 */
export function inFastLane(batch: Batch, hostOf: (host: string) => HostState | undefined): boolean {
  if (!FAST_TOPICS.has(batch.topic)) return false;
  return batch.items.every(({ envelope }) => {
    const host = hostOf(envelope.host);
    return host?.lastSample !== undefined && Date.parse(envelope.ts) - host.lastSample <= 2 * host.intervalMs;
  });
}
