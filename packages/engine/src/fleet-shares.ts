import { isHostName, must, MAX_EVENT_LEAD_MS, MAX_LABEL_VALUE_LENGTH, MAX_SHARED_HOSTS } from '@gpualert/schema';
import { deleteClusterMember, setClusterMember } from './cluster-members.ts';
import { dict, type FleetState, type HostState } from './engine-state.ts';

/**
 * One host's part of the fleet-wide facts, as the engine that owns the host shares it with the
 * other engines (one field per host in the store, `ENGINE_FLEET_SHARES_KEY`): its smoothed
 * utilisation in its job (stragglers) and its driver and CUDA versions in its cluster (drift).
 * A host is judged by the one engine that owns its partition; the others only count it among
 * its job's peers and its cluster's members, so no alert is raised twice.
 */
export interface HostShare {
  /** The host it is of, where the writer says so (gpualert's shares do not: their field names the host); it must be the field's. */
  readonly host?: string;
  readonly job?: { readonly name: string; readonly util: number; readonly at: number };
  readonly cluster?: { readonly name: string; readonly driver: string; readonly cuda: string };
}

/** The longest job or cluster name (a label value), driver or CUDA version a share may carry. */
const MAX_SHARED_TEXT = MAX_LABEL_VALUE_LENGTH;
/** The longest share read: four texts at their bound, each character escaped as JSON may (`\u001f`), and room to spare. Longer ones are not parsed, nor kept. */
export const MAX_SHARE_CHARS = 4 * 6 * MAX_SHARED_TEXT + 1_024;
/** Utilisation is a percentage (as the rules' thresholds are): outside it, a share is a bug or an edit. */
const MIN_UTIL_PCT = 0;
const MAX_UTIL_PCT = 100;

/** The share of a host this engine owns, by its current `job` and `cluster` labels; undefined when it has neither entry. */
export function shareOf(fleet: FleetState, host: HostState): HostShare | undefined {
  const jobName = host.labels.job;
  const clusterName = host.labels.cluster;
  const job = jobName === undefined ? undefined : fleet.jobs[jobName]?.[host.host];
  const cluster = clusterName === undefined ? undefined : fleet.clusters[clusterName]?.[host.host];
  // Within 0..100 %, as every reader checks: smoothing rounds a steady 100 % to 100.00000000000001 at times.
  const util = job === undefined ? NaN : Math.min(MAX_UTIL_PCT, Math.max(MIN_UTIL_PCT, job.util));
  const shared = jobName !== undefined && job !== undefined && !Number.isNaN(util) ? { name: jobName, util, at: job.at } : undefined;
  if (shared === undefined && cluster === undefined) return undefined;
  return {
    ...(shared !== undefined ? { job: shared } : {}),
    ...(clusterName !== undefined && cluster !== undefined ? { cluster: { name: clusterName, driver: cluster.driver, cuda: cluster.cuda } } : {}),
  };
}

/**
 * A share as the store holds it; undefined for one that does not read or is out of range (another
 * engine's bug, an older gpualert, an edit): that host counts nowhere. Its time is checked against
 * the clock by the view (`SharedView.apply`), which knows the time.
 */
export function parseShare(json: string): HostShare | undefined {
  if (json.length > MAX_SHARE_CHARS) return undefined; // not parsed at all: no share of ours is near it
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return undefined;
  }
  // Checked by hand, not by a schema: every engine reads every host's share at every tick.
  if (!isObject(raw)) return undefined;
  const { host, job, cluster } = raw;
  const share: { -readonly [K in keyof HostShare]: HostShare[K] } = {};
  if (host !== undefined) {
    if (!isHostName(host)) return undefined;
    share.host = host;
  }
  if (job !== undefined) {
    if (!isObject(job) || !isText(job.name) || !isUtil(job.util) || !isFiniteNumber(job.at)) return undefined;
    share.job = { name: job.name, util: job.util, at: job.at };
  }
  if (cluster !== undefined) {
    if (!isObject(cluster) || !isText(cluster.name) || !isText(cluster.driver) || !isText(cluster.cuda)) return undefined;
    share.cluster = { name: cluster.name, driver: cluster.driver, cuda: cluster.cuda };
  }
  return share;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isText = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_SHARED_TEXT;
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isUtil = (v: unknown): v is number => typeof v === 'number' && v >= MIN_UTIL_PCT && v <= MAX_UTIL_PCT; // NaN fails both

/** What the last `SharedView.apply` left out: shares past `MAX_SHARED_HOSTS`, and shares refused (unreadable, out of range, misnamed, dated ahead). */
export interface SkippedShares {
  readonly beyond: number;
  readonly refused: number;
}

/** What a view last took from one foreign host's share: its text, and where it put the host. */
interface Applied {
  /** Undefined for a text past `MAX_SHARE_CHARS`: not kept, and refused again at each read by its length alone. */
  text: string | undefined;
  job?: string | undefined;
  cluster?: string | undefined;
  seen: number;
  /** Refused: counts nowhere while its text stays the same. */
  refused?: boolean;
  /** Refused only for being dated ahead: read again once the clock is within `MAX_EVENT_LEAD_MS` of this time. */
  ahead?: number;
}

/**
 * One engine's view of the other engines' hosts, kept up to date from the shares in the store.
 * Each refresh reads every host's share, but parses and moves only those whose text changed since
 * the last one (a host's share changes with each of its samples while it has a job, else rarely);
 * the entries of the hosts this engine owns stay as its own judging left them.
 *
 * The store is anyone's to write: at most `MAX_SHARED_HOSTS` shares are taken in (the hosts already
 * in the view first; a refused share takes no place), and a share that is
 * past `MAX_SHARE_CHARS`, out of range, under a name no host has or another host's, or dated more
 * than `MAX_EVENT_LEAD_MS` ahead (it would count as a fresh peer until then) counts nowhere.
 */
export class SharedView {
  private readonly applied = new Map<string, Applied>();
  private round = 0;
  private left: SkippedShares = { beyond: 0, refused: 0 };

  /** What the last `apply` left out. */
  get skipped(): SkippedShares {
    return this.left;
  }

  /**
   * Applies the shares the store holds now; a host gone from the store (forgotten), from a job or
   * from a cluster drops out, unless `keepMissing` (the store lost its data: they come back).
   * `now`: the clock a share's time is checked against (Infinity: none is ahead); `held`: how many
   * fields the store holds, when it was read only in part (the rest are counted as left out).
   * Returns the clusters whose membership or versions changed: their owned hosts are judged again.
   */
  apply(
    fleet: FleetState,
    shares: Readonly<Record<string, string>>,
    owns: (host: string) => boolean,
    keepMissing = false,
    now = Date.now(),
    held?: number,
  ): Set<string> {
    const changed = new Set<string>();
    const round = (this.round += 1);
    const latest = now + MAX_EVENT_LEAD_MS;
    // The hosts already in the view first: fields written by no gpualert cannot push them out.
    const hosts = Object.keys(shares);
    const order =
      hosts.length <= MAX_SHARED_HOSTS ? hosts : [...hosts.filter((host) => this.applied.has(host)), ...hosts.filter((host) => !this.applied.has(host))];
    let refused = 0;
    let taken = 0;
    let beyond = held === undefined ? 0 : held - hosts.length;
    for (const host of order) {
      const text = must(shares[host], 'a host of the shares read');
      const was = this.applied.get(host);
      if (owns(host)) {
        if (was) this.applied.delete(host); // this engine's now: its memory is the truth, not the store
        continue;
      }
      // Only shares taken in count against the bound: refused ones cost a look, never a place.
      if (taken >= MAX_SHARED_HOSTS) {
        beyond += 1;
        continue;
      }
      if (was?.text === text && !(was.ahead !== undefined && was.ahead <= latest)) {
        was.seen = round;
        if (was.refused) refused += 1;
        else taken += 1;
        continue;
      }
      if (!isHostName(host)) {
        // never kept: looked at again, as cheaply, at each read
        refused += 1;
        continue;
      }
      const before = was?.cluster === undefined ? undefined : fleet.clusters[was.cluster]?.[host];
      let share = parseShare(text);
      const next: Applied = { text: text.length > MAX_SHARE_CHARS ? undefined : text, seen: round };
      if (share?.job !== undefined && share.job.at > latest) next.ahead = share.job.at;
      if (share === undefined || next.ahead !== undefined || (share.host !== undefined && share.host !== host)) {
        share = undefined;
        next.refused = true;
        refused += 1;
      } else {
        taken += 1;
      }
      // Moved out of a job or a cluster (or no longer readable): out of there; else only its values change.
      if (was)
        drop(fleet, host, {
          ...was,
          ...(was.job === share?.job?.name ? { job: undefined } : {}),
          ...(was.cluster === share?.cluster?.name ? { cluster: undefined } : {}),
        });
      if (share?.job) {
        (fleet.jobs[share.job.name] ??= dict())[host] = { util: share.job.util, at: share.job.at };
        next.job = share.job.name;
      }
      if (share?.cluster) {
        setClusterMember((fleet.clusters[share.cluster.name] ??= dict()), host, { driver: share.cluster.driver, cuda: share.cluster.cuda });
        next.cluster = share.cluster.name;
      }
      if (was?.cluster !== next.cluster || before?.driver !== share?.cluster?.driver || before?.cuda !== share?.cluster?.cuda) {
        if (was?.cluster !== undefined) changed.add(was.cluster);
        if (next.cluster !== undefined) changed.add(next.cluster);
      }
      this.applied.set(host, next);
    }
    for (const [host, was] of this.applied) {
      if (was.seen === round || keepMissing) continue;
      // Not read (past the bound) but this engine's now: its entries are its own judging's, not the view's.
      if (!owns(host)) {
        drop(fleet, host, was);
        if (was.cluster !== undefined) changed.add(was.cluster);
      }
      this.applied.delete(host);
    }
    this.left = { beyond, refused };
    return changed;
  }
}

function drop(fleet: FleetState, host: string, was: Applied): void {
  if (was.job !== undefined) {
    const hosts = fleet.jobs[was.job];
    if (hosts && Object.hasOwn(hosts, host)) delete hosts[host];
    if (hosts && isEmpty(hosts)) delete fleet.jobs[was.job];
  }
  if (was.cluster !== undefined) {
    const members = fleet.clusters[was.cluster];
    if (members) deleteClusterMember(members, host);
    if (members && isEmpty(members)) delete fleet.clusters[was.cluster];
  }
}

function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}
