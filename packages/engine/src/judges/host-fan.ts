import { MAX_FANS_PER_SAMPLE } from '@gpualert/schema';
import { fill } from '../conditions.ts';
import { dict } from '../engine-state.ts';
import type { Judge } from '../judge.ts';
import { coolingIncident, medianOf, noteCooling } from './host-cooling.ts';
import { endMissing } from './host-missing.ts';

/**
 * A chassis fan (from the BMC) failed — critical health, or stopped at 0 rpm — or turning slower
 * than `fraction` of its sibling fans' median speed. Failed fans are one alert per host (`rule|failed`),
 * whatever the BMC calls them (a BMC renaming its fans every poll still pages), and a fan last seen
 * failed that the BMC no longer lists, or lists without a reading ("No Reading", disabled), stays
 * failed for `missing_for` after it was last seen failed: only the fan seen turning again ends it.
 * A slow fan is one alert per fan. While either fires, the GPU heat alerts it `explains` are one
 * cooling incident with it.
 */
export const fan: Judge<'fan'> = {
  hostSample(ctx, rule) {
    const fans = ctx.data.fans;
    if (!fans) return;
    const { host, at } = ctx;
    const prefix = `${rule.id}|fan|`;
    const present = new Set<string>();
    const layer = host.hostLayer;
    let failedFans = layer?.failedFans;
    const failed: string[] = [];
    let failedRpm: number | undefined;
    let failedHealth = '';
    for (const f of fans) {
      if (f.health === 'critical' || (f.rpm === 0 && f.health !== 'unknown')) {
        failed.push(f.name);
        failedRpm ??= f.rpm ?? undefined;
        failedHealth ||= f.health;
        failedFans = (host.hostLayer ??= {}).failedFans ??= dict();
        failedFans[f.name] = at;
        continue;
      }
      // Seen turning again: that fan's failure is over. A fan without a reading has not come back.
      if (failedFans?.[f.name] !== undefined && f.rpm !== null && f.health !== 'unknown') delete failedFans[f.name];
      if (f.rpm === null) continue;
      const key = `${prefix}${f.name}`;
      present.add(key);
      const siblings: number[] = [];
      for (const other of fans) if (other !== f && other.rpm !== null && other.rpm > 0) siblings.push(other.rpm);
      const median = siblings.length >= rule.min_siblings ? medianOf(siblings) : undefined;
      const breaching = median !== undefined && f.rpm < rule.fraction * median;
      if (!breaching && host.trackers[key] === undefined) continue;
      const incident = breaching && rule.explains.length > 0 ? coolingIncident(host, key, rule.explains, at) : undefined;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching,
        summary: fill(rule.summary, { host: host.host, detail: `fan ${f.name} turns at ${f.rpm} rpm, its siblings at ${Math.round(median ?? 0)} rpm` }),
        evidence: [ctx.id],
        value: f.rpm,
        ...(incident !== undefined ? { rootCause: 'cooling', incident } : {}),
      });
      if (incident !== undefined) noteCooling(host, key, rule.explains, rule.explains_for, at, incident);
    }
    endMissing(ctx, rule, prefix, present, fill(rule.summary, { host: host.host, detail: 'fan no longer reported' }));
    const missing = failedFans ? stillMissing(failedFans, failed, at, rule.missing_for) : [];
    const key = `${rule.id}|failed`;
    const breaching = failed.length > 0 || missing.length > 0;
    if (!breaching && host.trackers[key] === undefined) return;
    const detail =
      failed.length > 0
        ? `${failed.length === 1 ? 'fan' : `${failed.length} fans:`} ${names(failed)} failed (${failedRpm === undefined ? 'no speed' : `${failedRpm} rpm`}, health ${failedHealth})`
        : `fan ${names(missing)} failed and is no longer read (last seen failed; over ${Math.round(rule.missing_for / 60_000)} min after that unless seen turning)`;
    const incident = breaching && rule.explains.length > 0 ? coolingIncident(host, key, rule.explains, at) : undefined;
    ctx.conditions.observe(host, key, rule, undefined, at, {
      breaching,
      summary: fill(rule.summary, { host: host.host, detail }),
      evidence: [ctx.id],
      ...(failedRpm !== undefined ? { value: failedRpm } : {}),
      ...(incident !== undefined ? { rootCause: 'cooling', incident } : {}),
    });
    if (incident !== undefined) noteCooling(host, key, rule.explains, rule.explains_for, at, incident);
  },
};

/** Fans last seen failed, not failed in this reading, within `missingFor`; older ones and those past the bound forgotten. */
function stillMissing(failedFans: Record<string, number>, failedNow: readonly string[], at: number, missingFor: number): string[] {
  const out: string[] = [];
  // Newest first: past the bound (a BMC renaming its fans), the oldest are forgotten.
  const seen = Object.entries(failedFans).sort(([, a], [, b]) => b - a);
  for (const [i, [name, last]] of seen.entries()) {
    if (i >= MAX_FANS_PER_SAMPLE || at - last > missingFor) delete failedFans[name];
    else if (!failedNow.includes(name)) out.push(name);
  }
  return out;
}

/** At most a few names, then how many more. */
function names(list: readonly string[]): string {
  return list.length <= 4 ? list.join(', ') : `${list.slice(0, 4).join(', ')} and ${list.length - 4} more`;
}
