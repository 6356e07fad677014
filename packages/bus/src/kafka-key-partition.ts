import { Partitioners, type ICustomPartitioner } from 'kafkajs';

/** How KafkaBus's producer places a message: kafkajs's default partitioner (murmur2 of the key, as Java's client places it). */
export const KAFKA_PARTITIONER: ICustomPartitioner = Partitioners.DefaultPartitioner;

const place = KAFKA_PARTITIONER();

/**
 * The partition of a topic of `partitions` that the producer puts a key's messages on, so a read
 * of one key fetches that partition only. Only the count matters for a keyed message.
 */
export function kafkaPartitionOf(topic: string, key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 0, replicas: [], isr: [] }));
  return place({ topic, partitionMetadata, message: { key, value: null } });
}
