import { fingerprintOf } from '../conditions.ts';
import type { HostState } from '../engine-state.ts';
import { middleOf } from '../peer-medians.ts';

/**
 * The incident a cooling alert (a fan, the inlet) observed under `key` is filed in: the host's open
 * cooling incident; else the host's open incident when a GPU heat alert it `explains` opened it
 * (the heat came first); else its own. Never an incident some other fault opened (a GPU fallen
 * off the bus): a dead fan there is a second problem, not part of the first.
 */
export function coolingIncident(host: HostState, key: string, explains: readonly string[], at: number): string {
  if (host.cooling && at <= host.cooling.until) return host.cooling.incident;
  const open = host.incident && at <= host.incident.until ? host.incident.fingerprint : undefined;
  if (open !== undefined) {
    for (const k in host.trackers) {
      const t = host.trackers[k];
      if (t?.firing === true && t.gpu !== undefined && explains.includes(t.rule) && fingerprintOf(host.host, k) === open) return open;
    }
  }
  return fingerprintOf(host.host, key);
}

/**
 * After a cooling rule observed its condition under `key`, filed in `incident` (`coolingIncident`):
 * while its alert fires, the host's GPU alerts of the rules it `explains` join that incident, root
 * cause cooling, until `explainsFor` after its last breach (GPUs stay warm a while after the airflow is back).
 */
export function noteCooling(host: HostState, key: string, explains: readonly string[], explainsFor: number, at: number, incident: string): void {
  if (explains.length === 0 || host.trackers[key]?.firing !== true) return;
  const until = at + explainsFor;
  const cooling = host.cooling;
  if (cooling && at <= cooling.until) {
    cooling.until = Math.max(cooling.until, until);
    for (const rule of explains) if (!cooling.explains.includes(rule) && cooling.explains.length < MAX_EXPLAINED_RULES) cooling.explains.push(rule);
    return;
  }
  host.cooling = { incident, until, explains: explains.slice(0, MAX_EXPLAINED_RULES) };
}

/** The persisted bound of `HostState.cooling.explains`. */
const MAX_EXPLAINED_RULES = 32;

/** The middle value of `values` (sorted in place); undefined when empty. */
export function medianOf(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  return middleOf(values.sort((a, b) => a - b));
}
