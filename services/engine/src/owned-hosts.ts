import { dict, engineHostKey, enginePartitionKey, parseHostState, StreamClock, type Engine, type EngineState } from '@gpualert/engine';
import type { Logger } from '@gpualert/log';
import type { StateStore } from '@gpualert/state';

/**
 * The hosts this instance owns, by partition, held in memory for as long as its assignment lasts:
 * the store is read once per host per assignment (and for every host of its partitions when it is
 * assigned, so a host that went silent while no engine owned it is still judged), and written
 * after every step that judged it.
 *
 * One rollback style for every step (a batch, a tick): a step that fails `drop`s the hosts it
 * touched from memory, and the next step reads them from the store, which holds what the last
 * step that succeeded saved: a failed batch's hosts come back with the batch's redelivery, a
 * failed tick's are read again before the next tick judges, so a silent host is not left unjudged.
 */
export class OwnedHosts {
  /** One clock per partition: a partition is one ordered stream of its hosts, as a recording is. */
  private readonly clocks = new Map<number, StreamClock>();
  private readonly partitionHosts = new Map<number, Set<string>>();
  private readonly loaded = new Set<string>();
  /** Hosts a failed tick dropped: read again before the next tick judges (a batch's come back with its redelivery). */
  private readonly toReload = new Set<string>();

  constructor(
    private readonly state: EngineState,
    private readonly engine: Engine,
    private readonly clock: 'wall' | 'event',
    private readonly store: StateStore,
    private readonly log: Logger,
  ) {}

  /** The hosts of a partition (its stream clock ticks these). */
  hostsOf(partition: number): Set<string> {
    let hosts = this.partitionHosts.get(partition);
    if (!hosts) this.partitionHosts.set(partition, (hosts = new Set()));
    return hosts;
  }

  clockOf(partition: number): StreamClock {
    let clock = this.clocks.get(partition);
    if (!clock) this.clocks.set(partition, (clock = new StreamClock(this.engine, this.clock, this.hostsOf(partition))));
    return clock;
  }

  /** The latest event time any partition's clock has reached (the event clock's now). */
  latestEventTime(): number {
    let latest = -Infinity;
    for (const clock of this.clocks.values()) latest = Math.max(latest, clock.now);
    return latest;
  }

  isLoaded(host: string): boolean {
    return this.loaded.has(host);
  }

  /** Reads from the store the hosts not in memory yet. What an older gpualert wrote is migrated; what cannot be read is judged afresh, with a line saying so. */
  async ensureLoaded(hosts: Iterable<string>): Promise<void> {
    await Promise.all(
      [...hosts]
        .filter((host) => !this.loaded.has(host))
        .map(async (host) => {
          const saved = await this.store.get(engineHostKey(host));
          const parsed = saved ? parseHostState(saved, (note) => this.log.warn({ host, note }, 'engine_state_loaded_with_changes')) : undefined;
          if (parsed) this.state.hosts[host] = parsed;
          else delete this.state.hosts[host]; // let the engine bind a template on first sight
          this.loaded.add(host);
        }),
    );
  }

  /**
   * The hosts a failed tick dropped, read again before the next tick judges: a silent host has no
   * batch to bring it back. Not a failed batch's: until its batch is delivered again, the store
   * holds an older state of them, and judging absence on it could call a reporting host down.
   */
  async reloadDropped(): Promise<void> {
    if (this.toReload.size === 0) return;
    const hosts = [...this.toReload].filter((host) => this.partitionsOf(host).length > 0);
    this.toReload.clear();
    await this.ensureLoaded(hosts);
  }

  /** Saves the hosts' state and indexes them under their partition (written with every step, so the index comes back by itself if the store loses its data). */
  async save(hosts: readonly string[], partition?: number): Promise<void> {
    const present = hosts.filter((host) => this.state.hosts[host] !== undefined);
    await Promise.all(present.map((host) => this.store.set(engineHostKey(host), JSON.stringify(this.state.hosts[host]))));
    if (partition !== undefined && present.length > 0)
      await this.store.hashSet(enginePartitionKey(partition), Object.fromEntries(present.map((host) => [host, '1'])));
  }

  /** The rollback: a failed step's hosts leave memory, and the next step reads them from the store (a tick's: the next tick, `reloadDropped`). */
  drop(hosts: Iterable<string>, reloadBeforeTick = false): void {
    for (const host of hosts) {
      this.loaded.delete(host);
      delete this.state.hosts[host];
      if (reloadBeforeTick) this.toReload.add(host);
    }
  }

  /** Hosts forgotten (host-forgetting.ts): out of memory and of every partition. */
  forget(hosts: readonly string[]): void {
    for (const host of hosts) {
      this.loaded.delete(host);
      for (const set of this.partitionHosts.values()) set.delete(host);
    }
  }

  /** The partitions a host is of. */
  partitionsOf(host: string): number[] {
    return [...this.partitionHosts].filter(([, set]) => set.has(host)).map(([p]) => p);
  }

  /**
   * A new assignment: what another instance judged meanwhile is in the store, not in memory. Every
   * host of the assigned partitions is read (the store's partition index names them); returns the
   * hosts this instance held before, for the caller to release those it no longer owns.
   */
  async assign(partitions: readonly number[]): Promise<EngineState['hosts'][string][]> {
    const before = Object.values(this.state.hosts);
    this.state.hosts = dict();
    this.clocks.clear();
    this.partitionHosts.clear();
    this.loaded.clear();
    this.toReload.clear();
    for (const partition of new Set(partitions)) {
      const hosts = Object.keys(await this.store.hashGetAll(enginePartitionKey(partition)));
      for (const host of hosts) this.hostsOf(partition).add(host);
      await this.ensureLoaded(hosts);
    }
    return before;
  }
}
