import type { Batch, BatchContext } from '@gpualert/bus';
import type { HostState } from '@gpualert/engine';
import { TOPICS } from '@gpualert/schema';

/** The topics of the fast lane: faults and notices, read by a lane of their own (`ConsumeOptions.fastTopics`). */
export const FAST_TOPICS: ReadonlySet<string> = new Set([TOPICS.kernelEvents, TOPICS.providerEvents, TOPICS.bmcEvents]);

/**
 * The fast lane: a batch of kernel events, provider notices or BMC events goes before the sample
 * batches waiting when each of its hosts is live, i.e. judged from its samples up to about the
 * event's time (within two of its sample intervals). Any other batch keeps its place: a host's
 * first fault waits for its first samples (which map its PCI addresses to GPUs), and in a backlog
 * a fault waits for the samples before it, so the host is judged in the order things happened.
 * Read by a lane of its own, such a batch first waits until the samples published on its partition
 * before it came are judged (`waitForSamples`).
 */
export function inFastLane(batch: Batch, hostOf: (host: string) => HostState | undefined): boolean {
  if (!FAST_TOPICS.has(batch.topic)) return false;
  return batch.items.every(({ envelope }) => {
    const host = hostOf(envelope.host);
    return host?.lastSample !== undefined && Date.parse(envelope.ts) - host.lastSample <= 2 * host.intervalMs;
  });
}

/**
 * A fault's batch not in the fast lane waits for its partition's samples published before it came:
 * the samples lane fetches apart, and may not have fetched them yet. Resolves to whether the batch
 * may go before the sample batches waiting: in the fast lane, or its partition's samples before it
 * judged (the others' are other hosts'). Where the samples lane could not say (one lane reads
 * both, as the in-process bus without lanes does, or a rebalance came), it keeps its place.
 */
export async function waitForSamples(batch: Batch, context: BatchContext, hostOf: (host: string) => HostState | undefined): Promise<boolean> {
  if (!FAST_TOPICS.has(batch.topic)) return false;
  if (inFastLane(batch, hostOf)) return true;
  return context.caughtUp(TOPICS.gpuSamples);
}
