import { z } from 'zod';
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
const text = z.string().max(MAX_SHARED_TEXT);
const MAX_SHARE_CHARS = 6 * MAX_SHARED_TEXT;
const finite = z.number().refine(Number.isFinite, 'expected a finite number');
const ShareSchema = z.object({
  job: z.object({ name: text, util: finite, at: finite }).optional(),
  cluster: z.object({ name: text, driver: text, cuda: text }).optional(),
});

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
  const checked = ShareSchema.safeParse(raw);
  if (!checked.success) return undefined;
  const { job, cluster } = checked.data;
  return { ...(job ? { job } : {}), ...(cluster ? { cluster } : {}) };
}

/**
 * Puts the other engines' hosts into this engine's view of the fleet: every entry of a host it
 * does not own is replaced by what the store holds now (a host forgotten, or gone from a job or a
 * cluster, drops out), while the entries of the hosts it owns stay as its own judging left them.
 * Returns the clusters whose membership or versions changed: their owned hosts are judged again.
 */
export function applyShares(fleet: FleetState, shares: Readonly<Record<string, string>>, owns: (host: string) => boolean): Set<string> {
  const changed = new Set<string>();
  const before = new Map<string, Map<string, string>>(); // cluster → host → driver/cuda: the foreign members as they were
  for (const name in fleet.jobs) {
    const hosts = fleet.jobs[name]!;
    for (const host in hosts) if (!owns(host)) delete hosts[host];
  }
  for (const name in fleet.clusters) {
    const members = fleet.clusters[name]!;
    for (const host in members) {
      if (owns(host)) continue;
      let was = before.get(name);
      if (!was) before.set(name, (was = new Map()));
      was.set(host, versions(members[host]!));
      delete members[host];
    }
  }
  for (const host of Object.keys(shares)) {
    if (owns(host)) continue;
    const share = parseShare(shares[host]!);
    if (share?.job) (fleet.jobs[share.job.name] ??= dict())[host] = { util: share.job.util, at: share.job.at };
    if (share?.cluster) {
      const member = { driver: share.cluster.driver, cuda: share.cluster.cuda };
      (fleet.clusters[share.cluster.name] ??= dict())[host] = member;
      const was = before.get(share.cluster.name);
      if (was?.get(host) !== versions(member)) changed.add(share.cluster.name);
      was?.delete(host);
    }
  }
  for (const [name, gone] of before) if (gone.size > 0) changed.add(name); // members gone
  for (const name in fleet.jobs) if (isEmpty(fleet.jobs[name]!)) delete fleet.jobs[name];
  for (const name in fleet.clusters) if (isEmpty(fleet.clusters[name]!)) delete fleet.clusters[name];
  return changed;
}

/** The hosts this engine owns in the given clusters: those to judge again once the clusters changed. */
export function ownedMembers(fleet: FleetState, clusters: Iterable<string>, owns: (host: string) => boolean): string[] {
  const out: string[] = [];
  for (const name of clusters) {
    const members = fleet.clusters[name];
    if (members) for (const host in members) if (owns(host)) out.push(host);
  }
  return out;
}

const versions = (m: { driver: string; cuda: string }) => JSON.stringify([m.driver, m.cuda]);

function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}
