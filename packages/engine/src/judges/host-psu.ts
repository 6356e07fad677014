import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { endMissing } from './host-missing.ts';

/**
 * The host runs without a spare PSU: a PSU redundancy group the BMC calls lost, or a PSU in
 * critical health. One alert per group or PSU.
 */
export const psuRedundancy: Judge<'psu_redundancy'> = {
  hostSample(ctx, rule) {
    const { host, at, data } = ctx;
    const present = new Set<string>();
    for (const group of data.psu_redundancy ?? []) {
      const key = `${rule.id}|group|${group.name}`;
      present.add(key);
      const breaching = group.state === 'lost';
      if (!breaching && host.trackers[key] === undefined) continue;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching, evidence: [ctx.id], summary: fill(rule.summary, { host: host.host, detail: `PSU redundancy ${group.name} lost (health ${group.health})` }),
      });
    }
    for (const psu of data.psus ?? []) {
      const key = `${rule.id}|psu|${psu.name}`;
      present.add(key);
      const breaching = psu.health === 'critical';
      if (!breaching && host.trackers[key] === undefined) continue;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching, evidence: [ctx.id], summary: fill(rule.summary, { host: host.host, detail: `PSU ${psu.name} failed (${psu.state})` }),
      });
    }
    // Only a reading that measured them says which are gone (a network reading has no PSUs).
    const gone = fill(rule.summary, { host: host.host, detail: 'no longer reported' });
    if (data.psu_redundancy) endMissing(ctx, rule, `${rule.id}|group|`, present, gone);
    if (data.psus) endMissing(ctx, rule, `${rule.id}|psu|`, present, gone);
  },
};
