import { matchesAll, parseMatchers, type Matcher } from './matchers.ts';

/** How far a silence reaches into what is firing now. */
export interface SilenceReach {
  /** Firing alerts it matches. */
  readonly matched: number;
  /** Firing alerts looked at. */
  readonly firing: number;
  /** Hosts among the matched alerts; an alert that names none counts as one of its own. */
  readonly hosts: number;
  /** Firing alerts not looked at (past the bound of what is read): the counts are of the rest. */
  readonly unread?: number;
}

/**
 * A silence that matches more than this share of the firing alerts, on more than one host, is
 * refused unless forced: `host=~".+"` or `alertname!=""` silence everything as Alertmanager lets
 * them, and a storm is when that is most tempting and most dangerous. A silence of every alert of
 * one host (its maintenance) is never refused for its reach. Each silence is judged alone: two
 * silences of half each are not refused (the guard is against the slip, not the determined).
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
function hostOf(labels: Readonly<Record<string, string>>): string | undefined {
  return labels.host ?? labels.instance?.replace(/:\d+$/, '');
}

export function silenceReach(matchers: readonly Matcher[], firing: Iterable<Readonly<Record<string, string>>>, unread = 0): SilenceReach {
  let matched = 0;
  let count = 0;
  let hostless = 0;
  const hosts = new Set<string>();
  for (const labels of firing) {
    count += 1;
    if (!matchesAll(matchers, labels)) continue;
    matched += 1;
    const host = hostOf(labels);
    if (host === undefined) hostless += 1;
    else hosts.add(host);
  }
  return { matched, firing: count, hosts: hosts.size + hostless, ...(unread > 0 ? { unread } : {}) };
}

export function tooBroad(reach: SilenceReach): boolean {
  return reach.hosts > 1 && reach.matched > reach.firing * SILENCE_MAX_SHARE;
}

/** "matches 12 of 20 firing alerts on 3 hosts", and how many were not read when some were not. */
export function describeReach(reach: SilenceReach): string {
  const read = reach.unread ? ` read (${reach.unread} more firing not read)` : '';
  return `matches ${reach.matched} of ${reach.firing} firing alert${reach.firing === 1 ? '' : 's'}${read} on ${reach.hosts} host${reach.hosts === 1 ? '' : 's'}`;
}
