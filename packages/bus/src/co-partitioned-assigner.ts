import { AssignerProtocol, type PartitionAssigner } from 'kafkajs';

/**
 * Partition `p` of every topic goes to the same member. Every topic is keyed by host with the same
 * partitioner and partition count, so one member then holds all of a host's samples, kernel events,
 * notices and inventory, and no two members ever judge (and save) one host at once. kafkajs's
 * round-robin deals topic-partitions out in one list and splits a host whenever the partition
 * count is not a multiple of the member count.
 */
export const CoPartitionedAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'GpualertCoPartitioned',
  version: 0,
  async assign({ members, topics }) {
    const sorted = members.map((m) => m.memberId).sort();
    const assignments = sorted.map((memberId) => {
      const assignment: Record<string, number[]> = {};
      return { memberId, assignment };
    });
    for (const topic of topics) {
      for (const { partitionId } of cluster.findTopicPartitionMetadata(topic)) {
        const member = assignments[partitionId % assignments.length];
        if (member) (member.assignment[topic] ??= []).push(partitionId);
      }
    }
    return assignments.map(({ memberId, assignment }) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return { name: 'GpualertCoPartitioned', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) };
  },
});

/** What a member of a consumer read in lanes says of itself when it joins (its metadata's userData). */
export interface LaneIdentity {
  /** The consumer it is a lane of: every lane of one consumer says the same. */
  readonly consumer: string;
  /** The topics (full names) this lane reads for its consumer; none for the lane that reads the rest. */
  readonly fast: readonly string[];
}

/** The lanes of one consumer in the group: the members, and the topics the fast one takes. */
interface LanedConsumer {
  main?: string;
  fast?: string;
  fastTopics: ReadonlySet<string>;
}

/**
 * Co-partitioned over consumers rather than members: partition `p` of every topic goes to the same
 * consumer, and within it to its fast lane for the topics that lane reads, to its other lane for
 * the rest (to whichever lane is left, should one be gone). A consumer read in lanes
 * (`ConsumeOptions.fastTopics`) is two members of the group, and its host state is one; a member
 * that says nothing of itself (an older gpualert) is a consumer of its own. While such a member is
 * in the group, which cannot take this protocol, the group falls back to `CoPartitionedAssigner`,
 * member by member: each lane then reads all its partitions' topics, and a consumer still owns
 * every host of the partitions its lanes hold.
 */
export function coPartitionedLanesAssigner(identity: LaneIdentity): PartitionAssigner {
  return ({ cluster }) => ({
    name: 'GpualertCoPartitionedLanes',
    version: 0,
    async assign({ members, topics }) {
      const consumers = new Map<string, LanedConsumer>();
      for (const { memberId, memberMetadata } of [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))) {
        const said = laneIdentityOf(memberMetadata) ?? { consumer: memberId, fast: [] };
        const known = consumers.get(said.consumer);
        if (said.fast.length > 0 && known?.fast === undefined) consumers.set(said.consumer, { ...known, fast: memberId, fastTopics: new Set(said.fast) });
        else if (said.fast.length === 0 && known !== undefined && known.main === undefined) known.main = memberId;
        else if (known === undefined && said.fast.length === 0) consumers.set(said.consumer, { main: memberId, fastTopics: new Set() });
        else consumers.set(memberId, { main: memberId, fastTopics: new Set() }); // a lane said twice: a member of its own
      }
      const order = [...consumers.keys()].sort();
      const assignments = new Map<string, Record<string, number[]>>(members.map((m) => [m.memberId, {}]));
      for (const topic of topics) {
        for (const { partitionId } of cluster.findTopicPartitionMetadata(topic)) {
          const consumer = consumers.get(order[partitionId % order.length] ?? '');
          const memberId = consumer?.fast !== undefined && consumer.fastTopics.has(topic) ? consumer.fast : (consumer?.main ?? consumer?.fast);
          const assignment = memberId === undefined ? undefined : assignments.get(memberId);
          if (assignment) (assignment[topic] ??= []).push(partitionId);
        }
      }
      return [...assignments].map(([memberId, assignment]) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment, userData: Buffer.alloc(0) }),
      }));
    },
    protocol({ topics }) {
      const userData = Buffer.from(JSON.stringify(identity));
      return { name: 'GpualertCoPartitionedLanes', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData }) };
    },
  });
}

/** A member's lane identity, when its metadata carries one that reads as such (a group's members are trusted no further). */
export function laneIdentityOf(metadata: Buffer): LaneIdentity | undefined {
  try {
    const userData = AssignerProtocol.MemberMetadata.decode(metadata)?.userData;
    if (!userData || userData.length === 0 || userData.length > MAX_IDENTITY_BYTES) return undefined;
    const said: unknown = JSON.parse(userData.toString('utf8'));
    if (typeof said !== 'object' || said === null) return undefined;
    const { consumer, fast } = said as Record<string, unknown>;
    if (typeof consumer !== 'string' || !Array.isArray(fast) || !fast.every((t) => typeof t === 'string')) return undefined;
    return { consumer, fast: fast as string[] };
  } catch {
    return undefined;
  }
}

/** A lane's identity is a UUID and a few topic names: anything much longer is not one of ours. */
const MAX_IDENTITY_BYTES = 16 * 1024;
