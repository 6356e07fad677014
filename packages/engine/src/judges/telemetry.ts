import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';

/**
 * A host agent's telemetry source gone quiet (nvidia-smi or DCGM hung, the exporter's values
 * frozen, the kernel log's reader stopped, Fabric Manager down), from its `telemetry.health`: one
 * alert per source, naming it, resolved by the first heartbeat that says it is back. The agent
 * has already waited its stated time before saying so. A source the agent no longer lists is
 * no longer watched: its alert ends.
 */
/** The sources an agent watches: a heartbeat naming others (a bug, a lying host) raises no alert for them. */
export const TELEMETRY_SOURCES: ReadonlySet<string> = new Set(['nvidia-smi', 'dcgm', 'kernel-log', 'fabric-manager']);

export const telemetry: Judge<'telemetry'> = {
  telemetry(ctx, rule) {
    const { host, at } = ctx;
    const prefix = `${rule.id}|`;
    const listed = new Set<string>();
    for (const source of ctx.data.sources) {
      if (!TELEMETRY_SOURCES.has(source.source)) continue;
      if (rule.sources && !rule.sources.includes(source.source)) continue;
      const key = prefix + source.source;
      listed.add(key);
      const breaching = source.state !== 'ok';
      if (!breaching && !host.trackers[key]) continue;
      const quiet = source.quiet_s !== undefined ? `, no fresh data for ${Math.round(source.quiet_s)} s` : '';
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching,
        summary: fill(rule.summary, {
          host: host.host,
          source: source.source,
          detail: `${source.state}${quiet}${source.message ? `: ${source.message}` : ''}`,
        }),
        evidence: [ctx.id],
        labels: { telemetry_source: source.source },
      });
    }
    for (const key in host.trackers) {
      if (!key.startsWith(prefix) || listed.has(key)) continue;
      const tracker = host.trackers[key];
      if (tracker?.firing) ctx.conditions.resolve(host, key, tracker, at);
      else delete host.trackers[key];
    }
  },
};
