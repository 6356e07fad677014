import { AssignerProtocol, type PartitionAssigner } from 'kafkajs';

/**
 * Partition `p` of every topic goes to the same member. Every topic is keyed by host with the same
 * partitioner and partition count, so one member then holds all of a host's samples, kernel events,
 * notices and inventory, and no two members ever judge (and save) one host at once. kafkajs's
 * round-robin deals topic-partitions out in one list and splits a host whenever the partition
 * count is not a multiple of the member count.
 *
 * Members are ranked by the instance id each one sends in its metadata, then by member id: two
 * groups whose members are the same instances (the engine's samples group and its fault lane)
 * then give partition p to the same instance in both. Member ids are the broker's and differ
 * between groups, so they alone could not.
 */
export const coPartitionedAssigner = (instance = ''): PartitionAssigner => ({ cluster }) => ({
  name: 'GpualertCoPartitioned',
  version: 0,
  async assign({ members, topics }) {
    const ranked = members
      .map((m) => ({ memberId: m.memberId, instance: instanceOf(m.memberMetadata) }))
      .sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
      .map((m) => m.memberId);
    const assignment = new Map<string, Record<string, number[]>>(ranked.map((id) => [id, Object.create(null) as Record<string, number[]>]));
    for (const topic of topics) {
      for (const { partitionId } of cluster.findTopicPartitionMetadata(topic)) {
        const member = assignment.get(ranked[partitionId % ranked.length]!)!;
        (member[topic] ??= []).push(partitionId);
      }
    }
    return ranked.map((memberId) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: assignment.get(memberId)!, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return { name: 'GpualertCoPartitioned', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.from(instance) }) };
  },
});

/** The assigner for members that name no instance: ranked by member id alone. */
export const CoPartitionedAssigner: PartitionAssigner = coPartitionedAssigner();

/** The instance id a member sent; none (an older member, a bad payload) ranks by member id alone. */
function instanceOf(metadata: Buffer): string {
  try {
    return AssignerProtocol.MemberMetadata.decode(metadata)?.userData.toString() ?? '';
  } catch {
    return '';
  }
}
