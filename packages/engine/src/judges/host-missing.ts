import type { HostSampleContext } from '../judge.ts';
import type { RuleSpec } from '../rule-set.ts';

/**
 * Ends the alerts of a rule's sensors (fans, PSUs, ports) a reading no longer lists: a BMC that
 * renames its sensors on every poll must not grow the host's trackers without bound. `prefix` is
 * the keys' common start (`rule|fan|`), `present` the keys the reading gave.
 */
export function endMissing(ctx: HostSampleContext, rule: RuleSpec, prefix: string, present: ReadonlySet<string>, summary: string): void {
  const { host, at } = ctx;
  for (const key in host.trackers) {
    if (!key.startsWith(prefix) || present.has(key)) continue;
    ctx.conditions.observe(host, key, rule, undefined, at, { breaching: false, summary });
    const tracker = host.trackers[key];
    // Quiet-resolved kinds (error counters) would wait out their quiet: a sensor gone is over now.
    if (tracker?.firing && !tracker.latched) ctx.conditions.resolve(host, key, tracker, at);
  }
}
