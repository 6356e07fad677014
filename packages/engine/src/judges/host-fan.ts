import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { medianOf, noteCooling } from './host-cooling.ts';
import { endMissing } from './host-missing.ts';

/**
 * A chassis fan (from the BMC) failed — critical health, or stopped at 0 rpm — or turning slower
 * than `fraction` of its sibling fans' median speed. One alert per fan; while it fires, the GPU
 * heat alerts it `explains` are one cooling incident with it.
 */
export const fan: Judge<'fan'> = {
  hostSample(ctx, rule) {
    const fans = ctx.data.fans;
    if (!fans) return;
    const { host, at } = ctx;
    const prefix = `${rule.id}|fan|`;
    const present = new Set<string>();
    for (let i = 0; i < fans.length; i += 1) {
      const f = fans[i]!;
      const key = `${prefix}${f.name}`;
      present.add(key);
      const failed = f.health === 'critical' || (f.rpm === 0 && f.health !== 'unknown');
      let slow = false;
      let median: number | undefined;
      if (!failed && f.rpm !== null) {
        const siblings: number[] = [];
        for (let j = 0; j < fans.length; j += 1) if (j !== i && fans[j]!.rpm !== null && fans[j]!.rpm! > 0) siblings.push(fans[j]!.rpm!);
        median = siblings.length >= rule.min_siblings ? medianOf(siblings) : undefined;
        slow = median !== undefined && f.rpm < rule.fraction * median;
      }
      const breaching = failed || slow;
      if (!breaching && host.trackers[key] === undefined) continue;
      const detail = failed
        ? `fan ${f.name} failed (${f.rpm === null ? 'no speed' : `${f.rpm} rpm`}, health ${f.health})`
        : `fan ${f.name} turns at ${f.rpm ?? '?'} rpm, its siblings at ${Math.round(median ?? 0)} rpm`;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching, summary: fill(rule.summary, { host: host.host, detail }), evidence: [ctx.id],
        ...(f.rpm !== null ? { value: f.rpm } : {}), ...(rule.explains.length > 0 ? { rootCause: 'cooling' } : {}),
      });
      if (breaching) noteCooling(host, key, rule.explains, rule.explains_for, at);
    }
    endMissing(ctx, rule, prefix, present, fill(rule.summary, { host: host.host, detail: 'fan no longer reported' }));
  },
};
