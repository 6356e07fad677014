import { fingerprintOf } from '../conditions.ts';
import type { HostState } from '../engine-state.ts';

/**
 * After a cooling rule (a fan, the inlet) observed its condition under `key`: while its alert
 * fires, the host's GPU alerts of the rules it `explains` join its incident, root cause cooling,
 * until `explainsFor` after its last breach (GPUs stay warm a while after the airflow is back).
 */
export function noteCooling(host: HostState, key: string, explains: readonly string[], explainsFor: number, at: number): void {
  if (explains.length === 0 || host.trackers[key]?.firing !== true) return;
  const until = at + explainsFor;
  const cooling = host.cooling;
  if (cooling && at <= cooling.until) {
    cooling.until = Math.max(cooling.until, until);
    for (const rule of explains) if (!cooling.explains.includes(rule) && cooling.explains.length < MAX_EXPLAINED_RULES) cooling.explains.push(rule);
    return;
  }
  // The incident its alert joined as it fired (its own fingerprint when it opened one).
  const incident = host.incident && at <= host.incident.until ? host.incident.fingerprint : fingerprintOf(host.host, key);
  host.cooling = { incident, until, explains: explains.slice(0, MAX_EXPLAINED_RULES) };
}

/** The persisted bound of `HostState.cooling.explains`. */
const MAX_EXPLAINED_RULES = 32;

/** The middle value of `values` (sorted in place); undefined when empty. */
export function medianOf(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  values.sort((a, b) => a - b);
  const mid = values.length >> 1;
  return values.length % 2 === 1 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
}
