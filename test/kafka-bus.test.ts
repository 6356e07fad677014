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

describe('Kafka read by key', () => {
  it("fetches only the partition the producer put the key on: all of each host's messages, none of the other partitions'", async () => {
    const bus = new KafkaBus({ brokers: inject('kafkaBrokers').split(','), topicPrefix: `${uniqueName('key')}.`, partitions: 4 });
    try {
      await bus.ensureTopics(['samples']);
      const base = Date.parse('2026-06-01T00:00:00Z');
      const hosts = Array.from({ length: 8 }, (_, i) => `gpu-node-${i}`);
      await bus.publish(
        'samples',
        hosts.flatMap((host) => [0, 1, 2].map((i) => ({ key: host, value: Buffer.from(`${host} ${i}`), timestamp: base + i * 1_000 }))),
      );
      // without a key, every partition is fetched: the count would see other partitions' messages
      let fetchedAll = 0;
      const all = await bus.read('samples', { fetched: (n) => (fetchedAll = n) });
      expect(fetchedAll).toBe(24);
      expect(new Set(all.map((m) => m.partition)).size).toBeGreaterThan(1);
      for (const host of hosts) {
        let fetched = 0;
        const mine = await bus.read('samples', { key: host, fetched: (n) => (fetched = n) });
        expect(mine.map((m) => m.value.toString())).toEqual([`${host} 0`, `${host} 1`, `${host} 2`]);
        const partition = all.find((m) => m.key === host)?.partition;
        expect(fetched).toBe(all.filter((m) => m.partition === partition).length);
      }
    } finally {
      await bus.close();
    }
  });
});
