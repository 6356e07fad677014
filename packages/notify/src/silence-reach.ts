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

/** A silence's reach counted alert by alert, so that a caller reading many may give the event loop turns between them. */
export class ReachCounter {
  private matched = 0;
  private firing = 0;
  private hostless = 0;
  private readonly hosts = new Set<string>();

  constructor(private readonly matchers: readonly Matcher[]) {}

  add(labels: Readonly<Record<string, string>>): void {
    this.firing += 1;
    if (!matchesAll(this.matchers, labels)) return;
    this.matched += 1;
    const host = hostOf(labels);
    if (host === undefined) this.hostless += 1;
    else this.hosts.add(host);
  }

  reach(unread = 0): SilenceReach {
    return { matched: this.matched, firing: this.firing, hosts: this.hosts.size + this.hostless, ...(unread > 0 ? { unread } : {}) };
  }
}

export function silenceReach(matchers: readonly Matcher[], firing: Iterable<Readonly<Record<string, string>>>, unread = 0): SilenceReach {
  const counter = new ReachCounter(matchers);
  for (const labels of firing) counter.add(labels);
  return counter.reach(unread);
}

export function tooBroad(reach: SilenceReach): boolean {
  return reach.hosts > 1 && reach.matched > reach.firing * SILENCE_MAX_SHARE;
}

/** "matches 12 of 20 firing alerts on 3 hosts", and how many were not read when some were not. */
export function describeReach(reach: SilenceReach): string {
  const read = reach.unread ? ` read (${reach.unread} more firing not read)` : '';
  return `matches ${reach.matched} of ${reach.firing} firing alert${reach.firing === 1 ? '' : 's'}${read} on ${reach.hosts} host${reach.hosts === 1 ? '' : 's'}`;
}
