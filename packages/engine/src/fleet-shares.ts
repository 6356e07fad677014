import { dict, type FleetState, type HostState } from './engine-state.ts';

/**
 * One host's part of the fleet-wide facts, as the engine that owns the host shares it with the
 * other engines (one field per host in the store, `ENGINE_FLEET_SHARES_KEY`): its smoothed
 * utilisation in its job (stragglers) and its driver and CUDA versions in its cluster (drift).
 * A host is judged by the one engine that owns its partition; the others only count it among
 * its job's peers and its cluster's members, so no alert is raised twice.
 */
export interface HostShare {
  readonly job?: { readonly name: string; readonly util: number; readonly at: number };
  readonly cluster?: { readonly name: string; readonly driver: string; readonly cuda: string };
}

/** The longest job or cluster name, driver or CUDA version a share may carry (a label value's own bound is smaller). */
const MAX_SHARED_TEXT = 1_024;
const MAX_SHARE_CHARS = 6 * MAX_SHARED_TEXT;

/** The share of a host this engine owns, by its current `job` and `cluster` labels; undefined when it has neither entry. */
export function shareOf(fleet: FleetState, host: HostState): HostShare | undefined {
  const jobName = host.labels.job;
  const clusterName = host.labels.cluster;
  const job = jobName === undefined ? undefined : fleet.jobs[jobName]?.[host.host];
  const cluster = clusterName === undefined ? undefined : fleet.clusters[clusterName]?.[host.host];
  if (job === undefined && cluster === undefined) return undefined;
  return {
    ...(job !== undefined ? { job: { name: jobName!, util: job.util, at: job.at } } : {}),
    ...(cluster !== undefined ? { cluster: { name: clusterName!, driver: cluster.driver, cuda: cluster.cuda } } : {}),
  };
}

/** A share as the store holds it; undefined for one that does not read (another engine's bug, or an edit): that host counts nowhere. */
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
  const { job, cluster } = raw;
  const share: { -readonly [K in keyof HostShare]: HostShare[K] } = {};
  if (job !== undefined) {
    if (!isObject(job) || !isText(job.name) || !isFiniteNumber(job.util) || !isFiniteNumber(job.at)) return undefined;
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

/** What a view last took from one foreign host's share: its text, and where it put the host. */
interface Applied {
  text: string;
  job?: string | undefined;
  cluster?: string | undefined;
  seen: number;
}

/**
 * One engine's view of the other engines' hosts, kept up to date from the shares in the store.
 * Each refresh reads every host's share, but parses and moves only those whose text changed since
 * the last one (a host's share changes with each of its samples while it has a job, else rarely);
 * the entries of the hosts this engine owns stay as its own judging left them.
 */
export class SharedView {
  private readonly applied = new Map<string, Applied>();
  private round = 0;

  /**
   * Applies the shares the store holds now; a host gone from the store (forgotten), from a job or
   * from a cluster drops out, unless `keepMissing` (the store lost its data: they come back).
   * Returns the clusters whose membership or versions changed: their owned hosts are judged again.
   */
  apply(fleet: FleetState, shares: Readonly<Record<string, string>>, owns: (host: string) => boolean, keepMissing = false): Set<string> {
    const changed = new Set<string>();
    const round = (this.round += 1);
    for (const host of Object.keys(shares)) {
      const text = shares[host]!;
      const was = this.applied.get(host);
      if (owns(host)) {
        if (was) this.applied.delete(host); // this engine's now: its memory is the truth, not the store
        continue;
      }
      if (was?.text === text) {
        was.seen = round;
        continue;
      }
      const before = was?.cluster === undefined ? undefined : fleet.clusters[was.cluster]?.[host];
      const share = parseShare(text);
      // Moved out of a job or a cluster (or no longer readable): out of there; else only its values change.
      if (was) drop(fleet, host, { ...was, ...(was.job === share?.job?.name ? { job: undefined } : {}), ...(was.cluster === share?.cluster?.name ? { cluster: undefined } : {}) });
      const now: Applied = { text, seen: round };
      if (share?.job) {
        (fleet.jobs[share.job.name] ??= dict())[host] = { util: share.job.util, at: share.job.at };
        now.job = share.job.name;
      }
      if (share?.cluster) {
        (fleet.clusters[share.cluster.name] ??= dict())[host] = { driver: share.cluster.driver, cuda: share.cluster.cuda };
        now.cluster = share.cluster.name;
      }
      if (was?.cluster !== now.cluster || before?.driver !== share?.cluster?.driver || before?.cuda !== share?.cluster?.cuda) {
        if (was?.cluster !== undefined) changed.add(was.cluster);
        if (now.cluster !== undefined) changed.add(now.cluster);
      }
      this.applied.set(host, now);
    }
    for (const [host, was] of this.applied) {
      if (was.seen === round || keepMissing) continue;
      drop(fleet, host, was);
      if (was.cluster !== undefined) changed.add(was.cluster);
      this.applied.delete(host);
    }
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
    if (members && Object.hasOwn(members, host)) delete members[host];
    if (members && isEmpty(members)) delete fleet.clusters[was.cluster];
  }
}


function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}
