import {
  ENGINE_FLEET_KEY,
  ENGINE_FLEET_SHARES_KEY,
  ENGINE_STATE_VERSION,
  MAX_SHARE_CHARS,
  parseHostState,
  shareOf,
  SharedView,
  type Engine,
  type EngineState,
  type HostState,
} from '@gpualert/engine';
import type { Logger } from '@gpualert/log';
import { MAX_EVENT_LEAD_MS, MAX_SHARED_HOSTS, type EnvelopeOf } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';

/** Fields of `engine:fleet:hosts` read at a tick: room for every host the view takes and as many refused. */
const MAX_SHARES_READ = 2 * MAX_SHARED_HOSTS;
/** Refreshes (2 s apart) with nothing left out before a new episode of skipped shares is said again. */
const QUIET_REFRESHES_TO_SAY_AGAIN = 30;

export interface FleetSharesOptions {
  /** Where the line goes that says shares were left out (once while it lasts); none: not said. */
  readonly log?: Logger;
  /**
   * The clock a share's time is checked against (default the machine's): one dated more than
   * `MAX_EVENT_LEAD_MS` ahead counts nowhere. `() => Infinity` on the event clock, where event times are not bounded either.
   */
  readonly now?: () => number;
}

/**
 * Fleet-wide judgement with several engines. Each engine owns the hosts of its partitions and
 * judges only those; stragglers and cluster-majority drift also need the job's and the cluster's
 * other hosts, which other engines own. So each engine shares, per host it owns, what those rules
 * know of it (`shareOf`: its smoothed utilisation in its job, its versions in its cluster) as one
 * field of a store hash, and reads the others' fields into its own view (`SharedView`) at every
 * tick. A host whose cluster changed under it is judged again from its last inventory.
 *
 * Shares are soft state, written behind (once a tick, only what changed): lost, they are written
 * again from the next samples, and a share this engine wrote that the store no longer holds (the
 * store wiped) is written again at the next tick. Training jobs stay one document per fleet.
 */
export class FleetShares {
  /** The hosts judged since the last flush: only their shares can have changed. */
  private readonly dirty = new Set<string>();
  /** What this engine last wrote for each host it owns. */
  private readonly written = new Map<string, string>();
  /** Clusters whose owned hosts must still be judged again (a rejudge whose alerts could not go out). */
  private readonly pending = new Set<string>();
  private trainingText: string | undefined;
  private readonly view = new SharedView();
  /** Refreshes in a row that left nothing out, since shares left out were last said. */
  private quietRefreshes = QUIET_REFRESHES_TO_SAY_AGAIN;

  constructor(
    private readonly store: StateStore,
    private readonly engine: Engine,
    private readonly state: EngineState,
    private readonly options: FleetSharesOptions = {},
  ) {}

  private readonly owns = (host: string): boolean => this.state.hosts[host] !== undefined;

  touched(hosts: Iterable<string>): void {
    for (const host of hosts) this.dirty.add(host);
  }

  /** Writes the shares of the hosts judged since the last flush that changed; on failure they stay due. */
  async flush(): Promise<void> {
    if (this.dirty.size === 0) return;
    const set: Record<string, string> = Object.create(null);
    const gone: string[] = [];
    let writes = 0;
    for (const host of this.dirty) {
      const hostState = this.state.hosts[host];
      if (!hostState) continue; // no longer this instance's, or forgotten
      const share = shareOf(this.state.fleet, hostState);
      const text = share === undefined ? undefined : JSON.stringify(share);
      if (text === this.written.get(host)) continue;
      if (text === undefined) gone.push(host);
      else set[host] = text;
      writes += 1;
    }
    if (writes > 0) {
      if (gone.length < writes) await this.store.hashSet(ENGINE_FLEET_SHARES_KEY, set);
      if (gone.length > 0) await this.store.hashDelete(ENGINE_FLEET_SHARES_KEY, ...gone);
      for (const host of gone) this.written.delete(host);
      for (const [host, text] of Object.entries(set)) this.written.set(host, text);
    }
    this.dirty.clear();
  }

  /**
   * Reads every host's share into this engine's view of the fleet and judges again the owned hosts
   * whose cluster changed. The alerts are returned with the hosts already updated; should they not
   * go out, `undo` puts the hosts back and the next refresh judges them again.
   */
  async refresh(): Promise<{ alerts: EnvelopeOf<'alert'>[]; undo: () => void }> {
    const { fields: stored, total } = await this.store.hashGetSome(ENGINE_FLEET_SHARES_KEY, MAX_SHARES_READ);
    const whole = total <= MAX_SHARES_READ;
    // A share this engine wrote that the store no longer holds (wiped, or an edit) is due again.
    // Read in part (a hash past the read bound), a share not read may still be there: not counted lost.
    let lost = false;
    for (const [host, text] of this.written) {
      if (stored[host] === text || (!whole && !Object.hasOwn(stored, host))) continue;
      lost ||= !Object.hasOwn(stored, host);
      this.written.delete(host);
      this.dirty.add(host);
    }
    // The store lost what this engine wrote: the other engines' shares are gone for a tick too, not
    // their hosts. Their last shares stay in the view until they write them again, and the training
    // document is written again as well.
    if (lost) this.trainingText = undefined;
    for (const cluster of this.view.apply(this.state.fleet, stored, this.owns, lost, (this.options.now ?? Date.now)(), total)) this.pending.add(cluster);
    this.noteSkipped();
    // A cluster one of this engine's own hosts joined or changed in: its other hosts' majority may have changed too.
    for (const cluster of this.engine.takeChangedClusters()) this.pending.add(cluster);
    const alerts: EnvelopeOf<'alert'>[] = [];
    const before = new Map<string, string>();
    const clusters = [...this.pending];
    this.pending.clear();
    alerts.push(...this.engine.rejudgeClusters(this.state, clusters, this.owns, (host) => before.set(host.host, JSON.stringify(host))));
    const undo = () => {
      for (const [host, text] of before) {
        const back = parseHostState(text);
        if (back) this.state.hosts[host] = back;
      }
      for (const cluster of clusters) this.pending.add(cluster);
    };
    return { alerts, undo };
  }

  /** Says, once until none is, that shares were left out: the store holds what no gpualert wrote, or more hosts than it reads. */
  private noteSkipped(): void {
    const { beyond, refused } = this.view.skipped;
    if (beyond + refused === 0) {
      this.quietRefreshes += 1;
      return;
    }
    // Said again only after a minute of refreshes with nothing left out: a share flipping each tick is one line, not one every other tick.
    const due = this.quietRefreshes >= QUIET_REFRESHES_TO_SAY_AGAIN;
    this.quietRefreshes = 0;
    if (!due) return;
    this.options.log?.warn(
      {
        key: ENGINE_FLEET_SHARES_KEY,
        skipped: beyond + refused,
        beyond,
        refused,
        max_hosts: MAX_SHARED_HOSTS,
        max_share_chars: MAX_SHARE_CHARS,
        max_lead_ms: MAX_EVENT_LEAD_MS,
      },
      'engine_fleet_shares_skipped',
    );
  }

  /** The training jobs' document, written when it changed. */
  async saveTraining(): Promise<void> {
    const training = this.state.fleet.training;
    const text = JSON.stringify({ version: ENGINE_STATE_VERSION, jobs: {}, clusters: {}, ...(training ? { training } : {}) });
    if (text === this.trainingText) return;
    await this.store.set(ENGINE_FLEET_KEY, text);
    this.trainingText = text;
  }

  /**
   * Hosts this engine no longer owns (a new assignment, after `flush`): their entries leave its view
   * and come back from the store at the next refresh, as the new owner shares them.
   */
  release(hosts: Iterable<HostState>): void {
    const { jobs, clusters } = this.state.fleet;
    for (const host of hosts) {
      const job = host.labels.job === undefined ? undefined : jobs[host.labels.job];
      if (job && Object.hasOwn(job, host.host)) delete job[host.host];
      const cluster = host.labels.cluster === undefined ? undefined : clusters[host.labels.cluster];
      if (cluster && Object.hasOwn(cluster, host.host)) delete cluster[host.host];
      this.written.delete(host.host);
      this.dirty.delete(host.host);
    }
  }

  /** Forgotten hosts (`gpualert host forget`, or unheard too long) leave the fleet for every engine. */
  async forget(hosts: readonly string[]): Promise<void> {
    if (hosts.length === 0) return;
    await this.store.hashDelete(ENGINE_FLEET_SHARES_KEY, ...hosts);
    for (const host of hosts) {
      this.written.delete(host);
      this.dirty.delete(host);
    }
  }
}
