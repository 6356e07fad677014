import { envelopeMessage, type Bus, type Subscription } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import type { ServiceDefinition } from '@gpualert/runtime';
import { eventTimeProblem, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { IdleDigest } from './idle-digest.ts';
import { NO_PRICES, type PriceLookup } from './prices.ts';
import { UsageAccumulator, type UsageOptions } from './rollup-accumulator.ts';

export interface UsageServiceOptions extends UsageOptions {
  readonly bus: Bus;
  readonly log: Logger;
  /** `wall`: the machine's clock closes hours too, so a silent fleet's last hour is still emitted; `event`: only event time (recordings). */
  readonly clock: 'wall' | 'event';
  readonly prices?: PriceLookup;
  readonly group?: string;
  /** How often the wall clock closes hours (default 30 s). */
  readonly tickMs?: number;
}

export const USAGE_GROUP = 'gpualert-usage';

/**
 * The usage rollups beside the engine: a consumer group of its own over samples, alerts, provider
 * events and inventories, publishing a `usage.rollup` per GPU per closed hour to `gpualert.usage`
 * and the daily idle-cost digest to `gpualert.alerts`. What it holds is the open hours, in memory:
 * a restart loses the hour in progress (docs/usage.md).
 */
export async function startUsageService(options: UsageServiceOptions): Promise<{ stop(): Promise<void> }> {
  const accumulator = new UsageAccumulator(options);
  const digest = new IdleDigest(options.prices ?? NO_PRICES);
  const { bus, log } = options;
  await bus.ensureTopics([TOPICS.usage, TOPICS.alerts]);
  let published = 0;
  const outputs = (rollups: EnvelopeOf<'usage.rollup'>[]) => ({ rollups, digests: digest.rollups(rollups) });

  const subscription: Subscription = await bus.consume({
    group: options.group ?? USAGE_GROUP,
    topics: [TOPICS.gpuSamples, TOPICS.alerts, TOPICS.providerEvents, TOPICS.hostInventory],
    handler: async (batch, context) => {
      const rollups: EnvelopeOf<'usage.rollup'>[] = [];
      const receivedAt = Date.now();
      for (const { envelope } of batch.items) {
        // A source clock far ahead would close every open hour at once: the engine dead-letters such events, and they are not counted here.
        if (options.clock === 'wall' && eventTimeProblem(envelope.ts, receivedAt) !== undefined) continue;
        if (envelope.type === 'alert') digest.alert(envelope);
        rollups.push(...accumulator.push(envelope, options.clock === 'wall' ? receivedAt : undefined));
      }
      const out = outputs(rollups);
      if (out.rollups.length > 0) await context.publish(TOPICS.usage, out.rollups.map(envelopeMessage));
      if (out.digests.length > 0) await context.publish(TOPICS.alerts, out.digests.map(envelopeMessage));
      note(out);
    },
  });
  const note = (out: ReturnType<typeof outputs>) => {
    if (out.rollups.length === 0) return;
    published += out.rollups.length;
    log.info(
      { rollups: out.rollups.length, digests: out.digests.length, total: published, late: accumulator.stats.late, late_alerts: accumulator.stats.lateAlerts },
      'usage_rollups_published',
    );
  };

  const timer =
    options.clock === 'wall'
      ? setInterval(() => {
          const out = outputs(accumulator.advance(Date.now()));
          if (out.rollups.length === 0) return;
          void (async () => {
            await bus.publish(TOPICS.usage, out.rollups.map(envelopeMessage));
            if (out.digests.length > 0) await bus.publish(TOPICS.alerts, out.digests.map(envelopeMessage));
            note(out);
          })().catch((error: unknown) => log.error({ error: String(error), rollups: out.rollups.length }, 'usage_publish_failed'));
        }, options.tickMs ?? 30_000)
      : undefined;
  timer?.unref();

  return {
    async stop() {
      if (timer) clearInterval(timer);
      await subscription.stop();
    },
  };
}

/** The rollups as one of `gpualert up`'s services. */
export function usageService(options: Omit<UsageServiceOptions, 'bus' | 'log'>): ServiceDefinition {
  return {
    name: 'usage',
    async start(context) {
      const service = await startUsageService({ ...options, bus: context.bus, log: context.log });
      return { name: 'usage', stop: () => service.stop() };
    },
  };
}
