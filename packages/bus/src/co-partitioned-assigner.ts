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
