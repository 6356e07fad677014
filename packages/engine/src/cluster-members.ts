import type { FleetState } from './engine-state.ts';

type Members = FleetState['clusters'][string];
type Member = Members[string];

/**
 * How many hosts of a cluster run each driver, kept beside the cluster's members as they change, so
 * a host's inventory asks the majority in the count of distinct drivers, not of hosts: counted
 * afresh per inventory, 12,500 hosts in one cluster spent 65 % of the engine's time there (bench
 * engine-scale). Members change through `setClusterMember` and `deleteClusterMember` only; a members
 * object the tallies have not seen (a state read from the store) is counted once, when first asked.
 */
const tallies = new WeakMap<Members, Map<string, number>>();

export function setClusterMember(members: Members, host: string, member: Member): void {
  const tally = tallies.get(members);
  if (tally) {
    const was = Object.hasOwn(members, host) ? members[host] : undefined;
    if (was) add(tally, was.driver, -1);
    add(tally, member.driver, 1);
  }
  members[host] = member;
}

export function deleteClusterMember(members: Members, host: string): void {
  if (!Object.hasOwn(members, host)) return;
  const was = members[host];
  const tally = tallies.get(members);
  if (tally && was) add(tally, was.driver, -1);
  delete members[host];
}

/** The driver most hosts of a cluster run (ties: the lowest), how many run it, and of how many. */
export function clusterMajority(members: Members): { value: string; count: number; of: number } | undefined {
  let tally = tallies.get(members);
  if (!tally) {
    tally = new Map();
    for (const host in members) {
      const member = members[host];
      if (member) add(tally, member.driver, 1);
    }
    tallies.set(members, tally);
  }
  let of = 0;
  for (const count of tally.values()) of += count;
  let best: { value: string; count: number; of: number } | undefined;
  for (const [value, count] of tally) if (!best || count > best.count || (count === best.count && value < best.value)) best = { value, count, of };
  return best;
}

function add(tally: Map<string, number>, driver: string, by: number): void {
  const count = (tally.get(driver) ?? 0) + by;
  if (count > 0) tally.set(driver, count);
  else tally.delete(driver);
}
