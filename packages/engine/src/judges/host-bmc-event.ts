import { severityRank } from '@gpualert/schema';
import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';

/**
 * A BMC log entry (SEL record, Redfish LogEntry) of at least `min_severity`, asserted: one alert
 * per sensor (or message id), resolved after `quiet` without another.
 */
export const bmcEvent: Judge<'bmc_event'> = {
  bmcEvent(ctx, rule) {
    const { host, at, data } = ctx;
    if (data.asserted === false || severityRank(data.severity) < severityRank(rule.min_severity)) return;
    const key = `${rule.id}|${data.sensor ?? data.code ?? data.log}`;
    const detail = `${data.sensor ? `${data.sensor}: ` : ''}${data.message}`;
    ctx.conditions.observe(host, key, rule, undefined, at, {
      breaching: true, severity: data.severity, evidence: [ctx.id], summary: fill(rule.summary, { host: host.host, detail }), description: `${data.log} entry ${data.entry_id}`,
    });
    const tracker = host.trackers[key];
    if (tracker) tracker.quietMs = rule.quiet;
  },
};
