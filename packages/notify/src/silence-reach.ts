import { matchesAll, parseMatchers, type Matcher } from './matchers.ts';

/** How far a silence reaches into what is firing now. */
export interface SilenceReach {
  /** Firing alerts it matches. */
  readonly matched: number;
  /** Firing alerts looked at. */
  readonly firing: number;
  /** Hosts among the matched alerts. */
  readonly hosts: number;
}

/**
 * A silence that matches more than this share of the firing alerts, on more than one host, is
 * refused unless forced: `host=~".+"` or `alertname!=""` silence everything as Alertmanager lets
 * them, and a storm is when that is most tempting and most dangerous. A silence of every alert of
 * one host (its maintenance) is never refused for its reach.
 */
export const SILENCE_MAX_SHARE = 0.5;

/** The matchers of a silence as stored (each text one matcher or a `{…}` list); undefined when one does not parse. */
export function silenceMatchers(texts: readonly string[]): Matcher[] | undefined {
  const out: Matcher[] = [];
  for (const text of texts) {
    const parsed = parseMatchers(text);
    if (typeof parsed === 'string') return undefined;
    out.push(...parsed);
  }
  return out;
}

/** The host an alert's labels name: gpualert's `host`, else Prometheus' `instance` without its port. */
function hostOf(labels: Readonly<Record<string, string>>): string {
  return labels.host ?? labels.instance?.replace(/:\d+$/, '') ?? '';
}

export function silenceReach(matchers: readonly Matcher[], firing: Iterable<Readonly<Record<string, string>>>): SilenceReach {
  let matched = 0;
  let count = 0;
  const hosts = new Set<string>();
  for (const labels of firing) {
    count += 1;
    if (!matchesAll(matchers, labels)) continue;
    matched += 1;
    hosts.add(hostOf(labels));
  }
  return { matched, firing: count, hosts: hosts.size };
}

export function tooBroad(reach: SilenceReach): boolean {
  return reach.hosts > 1 && reach.matched > reach.firing * SILENCE_MAX_SHARE;
}

/** "matches 12 of 20 firing alerts on 3 hosts" */
export function describeReach(reach: SilenceReach): string {
  return `matches ${reach.matched} of ${reach.firing} firing alert${reach.firing === 1 ? '' : 's'} on ${reach.hosts} host${reach.hosts === 1 ? '' : 's'}`;
}
