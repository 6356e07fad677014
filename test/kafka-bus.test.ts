import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, inject, it } from 'vitest';
import { busConformance } from '@gpualert/test-support';
import { KafkaBus } from '../packages/bus/src/kafka-bus.ts';
import { uniqueName } from './infra/wait-for.ts';

busConformance('Kafka', async () => new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${uniqueName('t')}.`, partitions: 4 }), 2_000);

describe('Kafka topics gpualert creates', () => {
  const brokers = () => inject('kafkaBrokers').split(',');

  it('get as many replicas as the cluster has brokers, up to three, unless the replication factor is set', async () => {
    const prefix = `${uniqueName('rf')}.`;
    const bus = new KafkaBus({ brokers: brokers(), topicPrefix: prefix, partitions: 2 });
    const admin = new Kafka({ brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
    try {
      await bus.ensureTopics(['events']);
      await admin.connect();
      const expected = Math.min(3, (await admin.describeCluster()).brokers.length);
      const { topics } = await admin.fetchTopicMetadata({ topics: [`${prefix}events`] });
      expect(topics[0]?.partitions.map((p) => p.replicas.length)).toEqual([expected, expected]);
    } finally {
      await Promise.all([bus.close(), admin.disconnect()]);
    }
  });

  it('a replication factor larger than the brokers up is refused before Kafka is asked, naming both', async () => {
    const admin = new Kafka({ brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const up = (await admin.describeCluster()).brokers.length;
    await admin.disconnect();
    const bus = new KafkaBus({ brokers: brokers(), topicPrefix: `${uniqueName('rf')}.`, replicationFactor: up + 1 });
    try {
      await expect(bus.ensureTopics(['events'])).rejects.toThrow(`with replication factor ${up + 1}: the cluster has ${up} broker(s) up`);
    } finally {
      await bus.close();
    }
  });
});
