import type { TestProject } from 'vitest/node';
import { KafkaBroker, kafkaVersion } from './kafka-broker.ts';
import { ensureRedis } from './redis-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    redisUrl: string;
  }
}

/**
 * Real services for the whole run: `KAFKA_BROKERS` or a single-node KRaft broker started here
 * from Apache Kafka's jars, and `REDIS_URL` or the machine's Redis (started when silent).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const starting = [process.env.KAFKA_BROKERS ? Promise.resolve(undefined) : KafkaBroker.create(), ensureRedis()] as const;
  const settled = await Promise.allSettled(starting);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    // What did start is stopped: a failed setup runs no teardown, and a broker left behind runs on.
    const [kafka, store] = settled;
    await Promise.allSettled([
      kafka.status === 'fulfilled' ? kafka.value?.destroy() : undefined,
      store.status === 'fulfilled' ? store.value.stop() : undefined,
    ]);
    throw failed.reason;
  }
  const [broker, redis] = await Promise.all(starting);
  const brokers = process.env.KAFKA_BROKERS ?? broker!.brokers;
  project.provide('kafkaBrokers', brokers);
  project.provide('redisUrl', redis.url);
  const what = broker ? `Apache Kafka ${kafkaVersion()} (KRaft) on ${brokers}` : `Kafka at ${brokers}`;
  console.log(`[test services] ${what}, Redis at ${redis.url}, ready in ${Date.now() - started} ms`);
  return async () => {
    await Promise.all([broker?.destroy(), redis.stop()]);
  };
}
