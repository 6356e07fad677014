import { MemoryBus, type Bus } from '@gpualert/bus';
import type { CommonConfig } from '@gpualert/config';
import type { Logger } from '@gpualert/log';
import { ALL_TOPICS } from '@gpualert/schema';
import { MemoryStore, type StateStore } from '@gpualert/state';

export interface Infrastructure {
  readonly bus: Bus;
  readonly store: StateStore;
  /** `embedded` when both are in-process; `distributed` when both are real. */
  readonly mode: 'embedded' | 'distributed' | 'mixed';
  close(): Promise<void>;
}

/**
 * The bus and the state store a service runs on: Kafka and Redis when configured, the
 * in-process ones otherwise. Creates gpualert's topics.
 */
export async function openInfrastructure(
  config: CommonConfig,
  log: Logger,
  options: { dataDir?: string; /** false: a producer only (the agent), which leaves topics to the services. */ createTopics?: boolean } = {},
): Promise<Infrastructure> {
  // Kafka's and Redis's clients load only when configured: a GPU host's agent pays for neither otherwise.
  const bus: Bus = config.kafkaBrokers
    ? new (await import('@gpualert/bus/kafka')).KafkaBus({
        brokers: config.kafkaBrokers,
        topicPrefix: config.topicPrefix,
        partitions: config.partitions,
        ...(config.replicationFactor === undefined ? {} : { replicationFactor: config.replicationFactor }),
        log: (level, event, detail) => log[level](detail, event),
      })
    : new MemoryBus({
        partitions: config.partitions,
        onError: (event, detail) => log.error(detail, event),
        ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      });
  const store: StateStore = config.redisUrl
    ? new (await import('@gpualert/state/redis')).RedisStore({ url: config.redisUrl, prefix: config.keyPrefix })
    : new MemoryStore({ prefix: config.keyPrefix });
  try {
    if (options.createTopics !== false) await bus.ensureTopics(ALL_TOPICS);
  } catch (error) {
    await Promise.allSettled([bus.close(), store.close()]);
    throw error;
  }
  const kinds = [bus.kind === 'kafka', store.kind === 'redis'];
  const mode = kinds.every(Boolean) ? 'distributed' : kinds.some(Boolean) ? 'mixed' : 'embedded';
  return {
    bus,
    store,
    mode,
    async close() {
      await Promise.allSettled([bus.close(), store.close()]);
    },
  };
}
