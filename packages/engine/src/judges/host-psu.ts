import { fill } from '../conditions.ts';
import type { HostState } from '../engine-state.ts';
import type { HostSampleContext, Judge } from '../judge.ts';
import type { RuleOf } from '../rule-set.ts';
import { endMissing } from './host-missing.ts';

/**
 * The host runs without a spare PSU: a PSU redundancy group the BMC calls lost, or a PSU in
 * critical health. One alert per group or PSU. A healthy reading ends a failure only once it has
 * lasted `settle` since the last failed one: a PSU flipping critical/ok every poll is failing
 * (its `for` runs from the first failure and it pages), one glitch in between does not reset it.
 */
export const psuRedundancy: Judge<'psu_redundancy'> = {
  hostSample(ctx, rule) {
    const { host, data } = ctx;
    const present = new Set<string>();
    for (const group of data.psu_redundancy ?? []) {
      const key = `${rule.id}|group|${group.name}`;
      present.add(key);
      judge(ctx, rule, host, key, group.state === 'lost', `PSU redundancy ${group.name} lost (health ${group.health})`);
    }
    for (const psu of data.psus ?? []) {
      const key = `${rule.id}|psu|${psu.name}`;
      present.add(key);
      judge(ctx, rule, host, key, psu.health === 'critical', `PSU ${psu.name} failed (${psu.state})`);
    }
    // Only a reading that measured them says which are gone (a network reading has no PSUs).
    const gone = fill(rule.summary, { host: host.host, detail: 'no longer reported' });
    if (data.psu_redundancy) endMissing(ctx, rule, `${rule.id}|group|`, present, gone);
    if (data.psus) endMissing(ctx, rule, `${rule.id}|psu|`, present, gone);
  },
};

function judge(ctx: HostSampleContext, rule: RuleOf<'psu_redundancy'>, host: HostState, key: string, breaching: boolean, detail: string): void {
  const tracker = host.trackers[key];
  if (!breaching && (tracker === undefined || ctx.at - tracker.lastBreach < rule.settle)) return; // not settled yet
  ctx.conditions.observe(host, key, rule, undefined, ctx.at, { breaching, evidence: [ctx.id], summary: fill(rule.summary, { host: host.host, detail }) });
}
