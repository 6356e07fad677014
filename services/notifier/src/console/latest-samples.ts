import type { Bus, Subscription } from '@gpualert/bus';
import { MAX_FLEET_HOSTS, TOPICS, type GpuMetrics } from '@gpualert/schema';

/** One host's last GPU sample, as the console draws it. */
export interface LatestSample {
  /** Event time (epoch ms). */
  readonly at: number;
  readonly gpus: readonly GpuMetrics[];
}

/**
 * Each host's last GPU sample, read off the bus: the engine keeps each GPU's baselines, not its
 * latest values, so the console keeps those itself. Bounded: past MAX_FLEET_HOSTS hosts, the one
 * heard from longest ago is forgotten first.
 */
export class LatestSamples {
  readonly hosts = new Map<string, LatestSample>();
  private subscription: Subscription | undefined;

  constructor(private readonly limit = MAX_FLEET_HOSTS) {}

  /** Joins its own consumer group on the samples topic, from the next sample on. */
  async watch(bus: Bus, group = 'gpualert-console-samples'): Promise<this> {
    this.subscription = await bus.consume({
      group,
      topics: [TOPICS.gpuSamples],
      fromBeginning: false,
      handler: (batch) => {
        for (const { envelope } of batch.items) if (envelope.type === 'gpu.sample') this.observe(envelope.host, Date.parse(envelope.ts), envelope.data.gpus);
        return Promise.resolve();
      },
    });
    return this;
  }

  /** Keeps a sample unless an older one than the host's last (a redelivery, a late scrape). */
  observe(host: string, at: number, gpus: readonly GpuMetrics[]): void {
    const last = this.hosts.get(host);
    if (last && last.at > at) return;
    // Re-inserted, so the Map's order is the order hosts were last heard from.
    this.hosts.delete(host);
    this.hosts.set(host, { at, gpus });
    if (this.hosts.size > this.limit) {
      const oldest = this.hosts.keys().next();
      if (!oldest.done) this.hosts.delete(oldest.value);
    }
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
  }
}
