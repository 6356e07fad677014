import { createRequire } from 'node:module';
import { KafkaJSConnectionError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { fixKafkajsCoordinatorLoss } from './kafkajs-coordinator-fix.ts';

fixKafkajsCoordinatorLoss();
const require = createRequire(import.meta.url);
type Construct = new (options: Record<string, unknown>) => Record<string, unknown>;
const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as Construct;
const OffsetManager = require('kafkajs/src/consumer/offsetManager/index.js') as Construct;

const quiet = { namespace: () => quiet, info() {}, debug() {}, warn() {}, error() {} };

/** A coordinator whose broker was killed: every request is refused, as kafkajs says it. */
function deadBroker(nodeId: number) {
  const refused = () => Promise.reject(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9'));
  return { nodeId, isConnected: () => false, heartbeat: refused, offsetCommit: refused };
}

function liveBroker(nodeId: number) {
  const heartbeats: unknown[] = [];
  return {
    nodeId,
    heartbeats,
    isConnected: () => true,
    heartbeat: (payload: unknown) => Promise.resolve(void heartbeats.push(payload)),
    offsetCommit: () => Promise.resolve(),
  };
}

/** A member of group `g` whose coordinator (node 3) died; the cluster names node 1 as the coordinator once it asks (or `undefined`: not yet elected). */
function memberOfDeadCoordinator(next: ReturnType<typeof liveBroker> | undefined) {
  const lookups: string[] = [];
  const cluster = {
    committedOffsets: () => ({}),
    findBroker: () => Promise.reject(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9')),
    findGroupCoordinator: ({ groupId }: { groupId: string }) => {
      lookups.push(groupId);
      return next ? Promise.resolve(next) : Promise.reject(new Error('The group coordinator is not available'));
    },
  };
  const dead = deadBroker(3);
  const group = new ConsumerGroup({ cluster, groupId: 'g', topics: [], logger: quiet, retry: {}, instrumentationEmitter: { emit() {} } }) as Record<
    string,
    unknown
  > & {
    heartbeat(options: { interval: number }): Promise<void>;
  };
  const offsets = new OffsetManager({ cluster, coordinator: dead, memberAssignment: {}, groupId: 'g', generationId: 4, memberId: 'm-1' }) as Record<
    string,
    unknown
  > & {
    getCoordinator(): Promise<unknown>;
  };
  Object.assign(group, { coordinator: dead, memberId: 'm-1', generationId: 4, offsetManager: offsets });
  return { group, offsets, lookups };
}

describe('kafkajs, its group coordinator killed', () => {
  it('a heartbeat refused by the dead coordinator fails once, then goes to the coordinator the cluster names now, as the same member', async () => {
    const next = liveBroker(1);
    const { group, offsets, lookups } = memberOfDeadCoordinator(next);
    await expect(group.heartbeat({ interval: 0 })).rejects.toThrow('ECONNREFUSED');
    await group.heartbeat({ interval: 0 });
    expect(next.heartbeats).toEqual([{ groupId: 'g', memberId: 'm-1', groupGenerationId: 4 }]);
    expect(lookups).toEqual(['g']);
    // Commits follow: they go to the new coordinator too.
    expect(offsets.coordinator).toBe(next);
  });

  it("a commit whose coordinator's broker is gone asks the cluster for the group's coordinator instead of failing for good", async () => {
    const next = liveBroker(1);
    const { offsets } = memberOfDeadCoordinator(next);
    await expect(offsets.getCoordinator()).resolves.toBe(next);
  });

  it('while no coordinator is elected yet, the heartbeat fails as before and the next one asks again', async () => {
    const { group, lookups } = memberOfDeadCoordinator(undefined);
    await expect(group.heartbeat({ interval: 0 })).rejects.toThrow('ECONNREFUSED');
    await expect(group.heartbeat({ interval: 0 })).rejects.toThrow('ECONNREFUSED');
    expect(lookups).toEqual(['g', 'g']);
  });
});
