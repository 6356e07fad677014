import { must, type EnvelopeOf } from '@gpualert/schema';
import { alertEnvelopes } from './alert-envelopes.ts';
import { deleteClusterMember } from './cluster-members.ts';
import { Conditions, type Transition } from './conditions.ts';
import type { EngineState, HostState } from './engine-state.ts';

/** How long a host may be unheard before the engine forgets it (`GPUALERT_FORGET_AFTER`): a week covers a long repair or a holiday. */
export const DEFAULT_FORGET_AFTER_MS = 7 * 86_400_000;
/** The shortest forget-after accepted: under a day, a host down over a night would be forgotten rather than called down. */
export const MIN_FORGET_AFTER_MS = 86_400_000;
/** The longest: a year (a larger value is a typo, and the state of decommissioned hosts would pile up). */
export const MAX_FORGET_AFTER_MS = 366 * 86_400_000;

const UNITS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * `GPUALERT_FORGET_AFTER` (`7d`, `36h`, `2w`; unset or empty: 7 days) in milliseconds, or one line
 * saying why not: a number with a unit, between a day and a year.
 */
export function parseForgetAfter(text: string | undefined): number | string {
  if (text === undefined || text.trim() === '') return DEFAULT_FORGET_AFTER_MS;
  const match = /^(\d{1,6})(m|h|d|w)$/.exec(text.trim());
  if (!match) return `GPUALERT_FORGET_AFTER expects a duration like 7d, 36h or 2w (got ${JSON.stringify(text.slice(0, 40))})`;
  const [, count, unit = ''] = match;
  const ms = Number(count) * must(UNITS[unit], 'the pattern admits only m, h, d and w');
  if (ms < MIN_FORGET_AFTER_MS || ms > MAX_FORGET_AFTER_MS) return `GPUALERT_FORGET_AFTER must be between 1d and 366d (got ${text.trim()})`;
  return ms;
}

/** When the host was last heard from (event time): its last sample, else its last inventory; undefined when neither. */
export function lastHeard(host: HostState): number | undefined {
  return host.lastSample ?? host.inventory?.at;
}

/**
 * The hosts unheard for longer than `afterMs` at `now`: decommissioned, not down. A host never
 * heard from by sample or inventory (only kernel or provider events) is not judged here: there is
 * no time to judge it by. At most `limit` are returned (the oldest first), so one look is bounded.
 */
export function hostsToForget(state: EngineState, now: number, afterMs: number, limit = 1_000): string[] {
  const stale: [string, number][] = [];
  for (const host of Object.values(state.hosts)) {
    const heard = lastHeard(host);
    if (heard !== undefined && now - heard > afterMs) stale.push([host.host, heard]);
  }
  return stale
    .sort((a, b) => a[1] - b[1])
    .slice(0, limit)
    .map(([name]) => name);
}

/**
 * Removes a host from the engine's state: its own state and its entry in every cluster's
 * versions (so a decommissioned host does not count in a cluster's majority). Every alert still
 * firing for it is resolved first, so no page and no chat thread stays open for a host that is
 * gone: those resolves are returned, to be published. Undefined when the state does not hold it.
 */
export function forgetHost(state: EngineState, name: string, now: number): EnvelopeOf<'alert'>[] | undefined {
  const host = state.hosts[name];
  if (!host) {
    dropFromClusters(state, name);
    return undefined;
  }
  const out: Transition[] = [];
  const conditions = new Conditions([host.template], out);
  const at = Math.max(now, host.lastTick);
  for (const [key, tracker] of Object.entries(host.trackers)) {
    // Its recent transitions are forgotten too: the resolve is told, not held as flapping.
    tracker.transitions = [];
    if (tracker.flapping) {
      // The episode ends (its own message resolves) and what the alert is now is told.
      tracker.firing = false;
      tracker.latched = false;
      conditions.tick(host, key, tracker, undefined, at);
    } else if (tracker.told === 'firing') {
      conditions.resolve(host, key, tracker, at);
    }
  }
  const alerts = alertEnvelopes(host, out);
  delete state.hosts[name];
  dropFromClusters(state, name);
  return alerts;
}

function dropFromClusters(state: EngineState, name: string): void {
  for (const members of Object.values(state.fleet.clusters)) {
    deleteClusterMember(members, name);
  }
}
