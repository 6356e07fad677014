import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clusterMajority, deleteClusterMember, setClusterMember } from './cluster-members.ts';
import { dict } from './engine-state.ts';

const host = fc.constantFrom('a', 'b', 'c', 'd', 'e', '__proto__', 'constructor');
const driver = fc.constantFrom('550.54.15', '550.90.07', '535.183.01');
/** A plain copy: a members object the tallies never saw. */
function copy(entries: Record<string, { driver: string; cuda: string }>): Record<string, { driver: string; cuda: string }> {
  const out = dict<{ driver: string; cuda: string }>();
  for (const [key, value] of Object.entries(entries)) out[key] = value;
  return out;
}

const change = fc.oneof(fc.record({ set: host, driver }), fc.record({ delete: host }));

describe("a cluster's majority driver, kept as its members change", () => {
  it('is what counting the members afresh says, after any joins, upgrades and leaves (hosts named like object members too)', () => {
    fc.assert(
      fc.property(fc.array(change, { maxLength: 40 }), (changes) => {
        const members = dict<{ driver: string; cuda: string }>();
        for (const c of changes) {
          if ('set' in c) setClusterMember(members, c.set, { driver: c.driver, cuda: '12.4' });
          else deleteClusterMember(members, c.delete);
          // Asked between changes too: the tally exists from the first question on, and must follow.
          const kept = clusterMajority(members);
          const afresh = clusterMajority(copy(members));
          expect(kept).toEqual(afresh);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('counts a state read from the store (members it never saw set) when first asked', () => {
    const members = copy({ h1: { driver: 'x', cuda: '1' }, h2: { driver: 'y', cuda: '1' }, h3: { driver: 'y', cuda: '1' } });
    expect(clusterMajority(members)).toEqual({ value: 'y', count: 2, of: 3 });
    setClusterMember(members, 'h2', { driver: 'x', cuda: '1' });
    expect(clusterMajority(members)).toEqual({ value: 'x', count: 2, of: 3 });
    deleteClusterMember(members, 'h1');
    expect(clusterMajority(members)).toEqual({ value: 'x', count: 1, of: 2 });
  });
});
