import { createRequire } from 'node:module';

interface Broker {
  readonly nodeId: number;
}

interface Cluster {
  findGroupCoordinator(options: { groupId: string }): Promise<Broker>;
}

interface OffsetManager {
  coordinator: Broker;
  readonly cluster: Cluster;
  readonly groupId: string;
  getCoordinator(): Promise<Broker>;
}

interface ConsumerGroup {
  coordinator: Broker | null;
  readonly cluster: Cluster;
  readonly groupId: string;
  offsetManager: OffsetManager | null;
  heartbeat(options: { interval: number }): Promise<void>;
}

/** What kafkajs throws when the broker it holds as coordinator is gone (dead, or no longer in the metadata). */
const COORDINATOR_LOST = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSBrokerNotFound']);

function coordinatorLost(error: unknown): boolean {
  const e = error as { name?: unknown; type?: unknown } | null;
  return typeof e?.name === 'string' && (COORDINATOR_LOST.has(e.name) || e.type === 'COORDINATOR_NOT_AVAILABLE');
}

/**
 * kafkajs 2.2.4 (its last release) looks a group's coordinator up only when it joins the group.
 * When the coordinator's broker dies, its heartbeats and commits keep going to that broker for as
 * long as the member stays in the group: measured on three brokers, a consumer went on consuming
 * but committed nothing for minutes, until the dead broker came back (the same bug as
 * dpkp/kafka-python#614). Kafka's own client marks the coordinator unknown on a lost connection
 * and asks the cluster again (`AbstractCoordinator.markCoordinatorUnknown`); this does the same
 * for a heartbeat or a commit that finds its coordinator gone. The member id and generation stay:
 * the new coordinator loads the group from `__consumer_offsets`, so no rejoin is needed.
 */
export function fixKafkajsCoordinatorLoss(): void {
  const require = createRequire(import.meta.url);
  let group: { prototype: ConsumerGroup & { __gpualertFixed?: boolean } };
  let offsets: { prototype: OffsetManager & { __gpualertFixed?: boolean } };
  try {
    group = require('kafkajs/src/consumer/consumerGroup.js') as typeof group;
    offsets = require('kafkajs/src/consumer/offsetManager/index.js') as typeof offsets;
  } catch {
    return; // a kafkajs whose layout changed: a newer one, whose coordinator handling is its own
  }
  if (group.prototype.__gpualertFixed || typeof group.prototype.heartbeat !== 'function' || typeof offsets.prototype.getCoordinator !== 'function') return;

  const heartbeat = group.prototype.heartbeat;
  group.prototype.heartbeat = async function (this: ConsumerGroup, options: { interval: number }): Promise<void> {
    try {
      await heartbeat.call(this, options);
    } catch (error) {
      if (coordinatorLost(error)) {
        // Still unknown (the broker not yet fenced, the partition's new leader not yet elected): the next heartbeat asks again.
        const found = await this.cluster.findGroupCoordinator({ groupId: this.groupId }).catch(() => undefined);
        if (found) {
          this.coordinator = found;
          if (this.offsetManager) this.offsetManager.coordinator = found;
        }
      }
      throw error;
    }
  };

  const getCoordinator = offsets.prototype.getCoordinator;
  offsets.prototype.getCoordinator = async function (this: OffsetManager): Promise<Broker> {
    try {
      return await getCoordinator.call(this);
    } catch (error) {
      if (!coordinatorLost(error)) throw error;
      this.coordinator = await this.cluster.findGroupCoordinator({ groupId: this.groupId });
      return this.coordinator;
    }
  };
  group.prototype.__gpualertFixed = true;
}
