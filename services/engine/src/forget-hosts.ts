import type { EngineState } from '@gpualert/engine';
import type { StateStore } from '@gpualert/state';
import { FORGET_KEY, HOST_KEY, PARTITION_KEY } from './store-keys.ts';

/**
 * GPUALERT_FORGET_AFTER's default: a week without a word from a host. A host down for a long
 * weekend's repair comes back remembered; one decommissioned stops costing a load and an absence
 * check on every reassignment a week later.
 */
export const DEFAULT_FORGET_AFTER_MS = 7 * 86_400_000;

/**
 * How long an operator's forget request is kept for the engines: every running engine ticks
 * within seconds and every rebalance settles within a minute, so ten minutes reaches them all.
 */
export const FORGET_REQUEST_TTL_MS = 10 * 60_000;

/**
 * Drops a host from the engine's memory: its state and its entries in the fleet-wide tallies
 * (cluster drivers, job utilisation), so a decommissioned host counts in no majority.
 * True when there was anything to drop.
 */
export function forgetHost(state: EngineState, host: string): boolean {
  let known = state.hosts[host] !== undefined;
  delete state.hosts[host];
  for (const tally of [state.fleet.clusters, state.fleet.jobs]) {
    for (const members of Object.values(tally)) {
      if (members[host] === undefined) continue;
      delete members[host];
      known = true;
    }
  }
  return known;
}

/** The hosts whose last event is older than `afterMs` at `now` (event time); none when afterMs is 0. */
export function longSilentHosts(state: EngineState, now: number, afterMs: number): string[] {
  if (afterMs <= 0) return [];
  const out: string[] = [];
  for (const [host, s] of Object.entries(state.hosts)) if (now - s.now > afterMs) out.push(host);
  return out;
}

/** The partitions a saved host state was judged on. */
export function partitionsOf(saved: string): number[] {
  let offsets: unknown;
  try {
    offsets = (JSON.parse(saved) as { offsets?: unknown }).offsets;
  } catch {
    return [];
  }
  return typeof offsets === 'object' && offsets !== null ? partitionsOfOffsets(offsets) : [];
}

/** The partitions of a host's offsets, which are keyed `topic/partition`. */
export function partitionsOfOffsets(offsets: object): number[] {
  const out = new Set<number>();
  for (const position of Object.keys(offsets)) {
    const partition = Number(position.slice(position.lastIndexOf('/') + 1));
    if (Number.isInteger(partition) && partition >= 0) out.add(partition);
  }
  return [...out];
}

/** Removes a host's state key and its entries in the given partitions' indexes. */
export async function dropHostFromStore(store: StateStore, host: string, partitions: Iterable<number>): Promise<void> {
  await Promise.all([...new Set(partitions)].map((p) => store.hashDelete(PARTITION_KEY(p), host)));
  await store.delete(HOST_KEY(host));
}

/**
 * `gpualert host forget HOST`: removes the host's state and its place in the partition index, so
 * no engine loads or judges it after a reassignment, and asks the running engines to drop it from
 * memory. `unknown` when the store holds no state for it.
 */
export async function requestForgetHost(store: StateStore, host: string, at: number): Promise<'forgotten' | 'unknown'> {
  const saved = await store.get(HOST_KEY(host));
  if (saved === null) return 'unknown';
  await dropHostFromStore(store, host, partitionsOf(saved));
  await store.sortedAdd(FORGET_KEY, [{ member: host, score: at }]);
  return 'forgotten';
}

/**
 * The forget requests of the last FORGET_REQUEST_TTL_MS (host → when asked); older ones are
 * removed. Each engine applies each request once (it keeps what it applied), since every engine
 * must see it: the one owning the host drops it, the others have nothing to drop.
 */
export async function pendingForgetRequests(store: StateStore, now: number): Promise<Map<string, number>> {
  await store.sortedRemoveRange(FORGET_KEY, -Infinity, now - FORGET_REQUEST_TTL_MS);
  const pending = await store.sortedRange(FORGET_KEY, now - FORGET_REQUEST_TTL_MS, Infinity);
  return new Map(pending.map((p) => [p.member, p.score]));
}
