import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { coPartitionedLanesAssigner, laneIdentityOf, type LaneIdentity } from './co-partitioned-assigner.ts';

const TOPICS = ['samples', 'kernel', 'notices'];
const PARTITIONS = 6;
const cluster = { findTopicPartitionMetadata: () => Array.from({ length: PARTITIONS }, (_, partitionId) => ({ partitionId })) };

function member(memberId: string, identity?: LaneIdentity | string) {
  const userData = identity === undefined ? Buffer.alloc(0) : Buffer.from(typeof identity === 'string' ? identity : JSON.stringify(identity));
  return { memberId, memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics: TOPICS, userData }) };
}

async function assign(members: ReturnType<typeof member>[]): Promise<Map<string, Record<string, number[]>>> {
  const assigner = coPartitionedLanesAssigner({ consumer: 'self', fast: [] })({ cluster } as never);
  const out = await assigner.assign({ members, topics: TOPICS, userData: Buffer.alloc(0) } as never);
  return new Map(out.map(({ memberId, memberAssignment }) => [memberId, AssignerProtocol.MemberAssignment.decode(memberAssignment)?.assignment ?? {}]));
}

describe('the co-partitioned lanes assigner', () => {
  it("gives partition p of every topic to one consumer, its fast topics to that consumer's fast lane and the rest to its other lane", async () => {
    const got = await assign([
      member('m-a-main', { consumer: 'a', fast: [] }),
      member('m-a-fast', { consumer: 'a', fast: ['kernel', 'notices'] }),
      member('m-b-fast', { consumer: 'b', fast: ['kernel', 'notices'] }),
      member('m-b-main', { consumer: 'b', fast: [] }),
    ]);
    expect(got.get('m-a-main')).toEqual({ samples: [0, 2, 4] });
    expect(got.get('m-a-fast')).toEqual({ kernel: [0, 2, 4], notices: [0, 2, 4] });
    expect(got.get('m-b-main')).toEqual({ samples: [1, 3, 5] });
    expect(got.get('m-b-fast')).toEqual({ kernel: [1, 3, 5], notices: [1, 3, 5] });
  });

  it('gives a consumer whose fast lane is gone everything of its partitions, and counts a member that says nothing of itself as a consumer of its own', async () => {
    const got = await assign([member('m-a-main', { consumer: 'a', fast: [] }), member('m-older')]);
    // Consumers in order of their names: 'a' before 'm-older'.
    expect(got.get('m-a-main')).toEqual({ samples: [0, 2, 4], kernel: [0, 2, 4], notices: [0, 2, 4] });
    expect(got.get('m-older')).toEqual({ samples: [1, 3, 5], kernel: [1, 3, 5], notices: [1, 3, 5] });
  });

  it('gives a fast lane alone every topic of its partitions, and a lane said twice a share of its own rather than half a consumer', async () => {
    const got = await assign([member('m-1', { consumer: 'a', fast: ['kernel'] }), member('m-2', { consumer: 'a', fast: ['kernel'] })]);
    expect(got.get('m-1')).toEqual({ samples: [0, 2, 4], kernel: [0, 2, 4], notices: [0, 2, 4] });
    expect(got.get('m-2')).toEqual({ samples: [1, 3, 5], kernel: [1, 3, 5], notices: [1, 3, 5] });
  });

  it("reads a member's identity only when it is one: other bytes leave it a consumer of its own", () => {
    const metadata = (userData: string | Buffer) => AssignerProtocol.MemberMetadata.encode({ version: 0, topics: TOPICS, userData: Buffer.from(userData) });
    expect(laneIdentityOf(metadata(JSON.stringify({ consumer: 'c', fast: ['kernel'] })))).toEqual({ consumer: 'c', fast: ['kernel'] });
    for (const hostile of [
      '',
      'not json',
      '[]',
      'null',
      '{"consumer":1,"fast":[]}',
      '{"consumer":"c","fast":"kernel"}',
      '{"consumer":"c","fast":[1]}',
      `{"consumer":"${'x'.repeat(20_000)}","fast":[]}`,
    ])
      expect(laneIdentityOf(metadata(hostile))).toBeUndefined();
    expect(laneIdentityOf(Buffer.from('garbage'))).toBeUndefined();
  });
});
