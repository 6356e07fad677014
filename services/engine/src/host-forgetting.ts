import { ENGINE_FLEET_SHARES_KEY, engineHostKey, enginePartitionKey, forgetHost, hostsToForget, parseHostState, type EngineState } from '@gpualert/engine';
import type { Logger } from '@gpualert/log';
import type { EnvelopeOf } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';

/** Where `gpualert host forget` leaves its requests: host → when asked (a sorted set every engine reads). */
export const FORGET_KEY = 'engine:forget';
/** A request is kept this long, so every engine (each reads every 2 s) sees it, then trimmed. */
const REQUEST_KEPT_MS = 3_600_000;
/** Requests read per look: the rest wait for the next. */
const MAX_REQUESTS_PER_LOOK = 1_000;

/**
 * `gpualert host forget HOST`: the saved state goes now (so no engine loads it again), and the
 * request is left for the running engines, which drop the host from memory and from their
 * partitions' index at their next tick (every 2 s).
 */
export async function requestHostForget(store: StateStore, host: string, at: number): Promise<{ hadState: boolean }> {
  const hadState = (await store.delete(engineHostKey(host))) > 0;
  await store.hashDelete(ENGINE_FLEET_SHARES_KEY, host); // no engine counts it among its job's or cluster's hosts
  await store.sortedAdd(FORGET_KEY, [{ member: host, score: at }]);
  return { hadState };
}

/**
 * What an engine instance forgets at each tick: the hosts `gpualert host forget` asked for (every
 * instance reads every request of the last hour and acts on the hosts it holds), and, when it may
 * judge absence, the hosts unheard for longer than `afterMs` (`GPUALERT_FORGET_AFTER`). Each
 * forgotten host is logged once (`host_forgotten`), its firing alerts resolved, its saved state
 * and partition index entry deleted: it is no longer loaded after any reassignment, nor called absent.
 */
export class HostForgetting {
  /** Requests already acted on: host → the request's time. */
  private readonly applied = new Map<string, number>();

  constructor(
    private readonly store: StateStore,
    private readonly log: Logger,
    private readonly afterMs: number,
  ) {}

  /**
   * Forgets what is due at `now` (the wall clock, or the event clock's time) and returns the
   * resolves to publish and the hosts to delete from the store once they are published.
   */
  async due(state: EngineState, now: number, absence: boolean): Promise<{ hosts: string[]; alerts: EnvelopeOf<'alert'>[]; undo: () => void }> {
    const asked = await this.requests();
    const stale = absence && Number.isFinite(now) ? hostsToForget(state, now, this.afterMs) : [];
    const hosts: string[] = [];
    const alerts: EnvelopeOf<'alert'>[] = [];
    /** The hosts as they were: should the resolves not go out, they are put back and forgotten at a later tick. */
    const before = new Map<string, string>();
    for (const [host, why] of [...asked.map((h) => [h, 'asked'] as const), ...stale.map((h) => [h, 'absent'] as const)]) {
      if (hosts.includes(host)) continue;
      const heard = state.hosts[host]?.lastSample;
      if (state.hosts[host]) before.set(host, JSON.stringify(state.hosts[host]));
      const resolves = forgetHost(state, host, Number.isFinite(now) ? now : Date.now());
      if (resolves === undefined && why === 'asked') continue; // not one of this instance's hosts
      hosts.push(host);
      alerts.push(...(resolves ?? []));
      this.log.info(
        {
          host,
          reason: why === 'asked' ? 'gpualert host forget' : `unheard for more than ${Math.round(this.afterMs / 3_600_000)} h`,
          ...(heard !== undefined ? { last_sample: new Date(heard).toISOString() } : {}),
          resolved: resolves?.length ?? 0,
        },
        'host_forgotten',
      );
    }
    const undo = () => {
      for (const [host, text] of before) {
        const back = parseHostState(text);
        if (back) state.hosts[host] = back;
      }
      for (const host of asked) this.applied.delete(host);
    };
    return { hosts, alerts, undo };
  }

  /** After the resolves went out: the hosts' saved state and their entries in the given partitions' index are deleted. */
  async commit(hosts: readonly string[], partitionsOf: (host: string) => readonly number[]): Promise<void> {
    if (hosts.length === 0) return;
    await this.store.delete(...hosts.map(engineHostKey));
    for (const host of hosts) {
      for (const partition of partitionsOf(host)) await this.store.hashDelete(enginePartitionKey(partition), host);
    }
  }

  private async requests(): Promise<string[]> {
    const wall = Date.now();
    await this.store.sortedRemoveRange(FORGET_KEY, -Infinity, wall - REQUEST_KEPT_MS);
    const pending = (await this.store.sortedRange(FORGET_KEY, wall - REQUEST_KEPT_MS, Infinity)).slice(0, MAX_REQUESTS_PER_LOOK);
    const hosts: string[] = [];
    for (const { member, score } of pending) {
      if (this.applied.get(member) === score) continue;
      this.applied.set(member, score);
      hosts.push(member);
    }
    for (const [host, score] of this.applied) if (score < wall - REQUEST_KEPT_MS) this.applied.delete(host);
    return hosts;
  }
}
