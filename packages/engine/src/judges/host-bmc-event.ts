import { severityRank } from '@gpualert/schema';
import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';

/**
 * A BMC log entry (SEL record, Redfish LogEntry) of at least `min_severity`, asserted: one alert
 * per sensor (or message id), resolved after `quiet` without another. An entry is judged once: the
 * last `remember` entries (log, id and creation time: a cleared SEL reuses ids) are kept, and one
 * created more than `max_age` before it arrives is history (a backlog read on a collector's start,
 * a republished log), not news; one whose BMC could not date it is judged. Past `max_alerts` open
 * sensors on a host, the rest fold into one alert of the host with their count.
 */
export const bmcEvent: Judge<'bmc_event'> = {
  bmcEvent(ctx, rule) {
    const { host, at, data } = ctx;
    if (data.asserted === false || severityRank(data.severity) < severityRank(rule.min_severity)) return;
    const created = data.created === undefined ? undefined : Date.parse(data.created);
    if (created !== undefined && at - created > rule.max_age) return;
    const seen = ((host.hostLayer ??= {}).bmcSeen ??= []);
    const entry = `${data.log}|${data.entry_id}|${data.created ?? ''}`;
    if (seen.includes(entry)) return;
    seen.push(entry);
    if (seen.length > rule.remember) seen.splice(0, seen.length - rule.remember);
    let key = `${rule.id}|${data.sensor ?? data.code ?? data.log}`;
    const fold = `${rule.id}||more`;
    let detail = `${data.sensor ? `${data.sensor}: ` : ''}${data.message}`;
    let value: number | undefined;
    if (host.trackers[key] === undefined && openSensors(host.trackers, `${rule.id}|`, fold) >= rule.max_alerts) {
      key = fold;
      value = (host.trackers[fold]?.value ?? 0) + 1;
      detail = `${value} more sensors past ${rule.max_alerts}, the last ${detail}`;
    }
    ctx.conditions.observe(host, key, rule, undefined, at, {
      breaching: true,
      severity: data.severity,
      evidence: [ctx.id],
      summary: fill(rule.summary, { host: host.host, detail }),
      description: `${data.log} entry ${data.entry_id}`,
      ...(value !== undefined ? { value } : {}),
    });
    const tracker = host.trackers[key];
    if (tracker) tracker.quietMs = rule.quiet;
  },
};

/** How many of the rule's sensor alerts are open (firing or waiting on `for`) on the host, the fold not counted. */
function openSensors(trackers: Record<string, { firing: boolean; since?: number }>, prefix: string, fold: string): number {
  let n = 0;
  for (const [key, t] of Object.entries(trackers)) if (key !== fold && key.startsWith(prefix) && (t.firing || t.since !== undefined)) n += 1;
  return n;
}
