import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { hostKey } from './keys.ts';
import { coolingIncident, noteCooling } from './host-cooling.ts';

/** Readings after which the host's normal moves as an average of about this many (slow drift of the room). */
const INLET_MEMORY = 200;

/**
 * The host's inlet air (the hottest inlet sensor of a BMC reading) above that host's own normal:
 * `sigmas` deviations and at least `min_delta` °C above the mean of its own past readings, once
 * it has `warmup_samples` of them. A reading outside `min_celsius`..`max_celsius` is a broken
 * sensor and counts as no reading. A reading above it does not teach the normal. While it fires,
 * the GPU heat alerts it `explains` are one cooling incident with it.
 */
export const inletTemp: Judge<'inlet_temp'> = {
  hostSample(ctx, rule) {
    const { host, at, data } = ctx;
    let inlet: number | undefined;
    for (const t of data.temperatures ?? []) {
      const c = t.celsius;
      // Outside the physical range: a broken sensor (1e6 °C), missing rather than learned or judged.
      if (t.location === 'inlet' && c !== null && c >= rule.min_celsius && c <= rule.max_celsius && (inlet === undefined || c > inlet)) inlet = c;
    }
    if (inlet === undefined) return;
    const layer = (host.hostLayer ??= {});
    const normal = layer.inlet;
    const limit = normal && normal.n >= rule.warmup_samples ? normal.mean + Math.max(rule.sigmas * normal.dev, rule.min_delta) : undefined;
    const breaching = limit !== undefined && inlet > limit;
    if (!breaching) {
      if (!normal) layer.inlet = { n: 1, mean: inlet, dev: 0 };
      else {
        normal.n += 1;
        const weight = 1 / Math.min(normal.n, INLET_MEMORY);
        normal.dev += (Math.abs(inlet - normal.mean) - normal.dev) * weight;
        normal.mean += (inlet - normal.mean) * weight;
      }
    }
    const key = hostKey(rule.id);
    if (!breaching && host.trackers[key] === undefined) return;
    const mean = normal?.mean ?? inlet;
    const incident = breaching && rule.explains.length > 0 ? coolingIncident(host, key, rule.explains, at) : undefined;
    ctx.conditions.observe(host, key, rule, undefined, at, {
      breaching,
      value: inlet,
      evidence: [ctx.id],
      ...(incident !== undefined ? { rootCause: 'cooling', incident } : {}),
      summary: fill(rule.summary, { host: host.host, value: inlet, baseline: mean, delta: inlet - mean }),
    });
    if (incident !== undefined) noteCooling(host, key, rule.explains, rule.explains_for, at, incident);
  },
};
