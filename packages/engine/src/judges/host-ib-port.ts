import { MAX_IB_PORTS_PER_SAMPLE, type IbPort } from '@gpualert/schema';
import { fill } from '../conditions.ts';
import { dict, type HostLayerState } from '../engine-state.ts';
import type { Judge } from '../judge.ts';
import type { RuleOf } from '../rule-set.ts';
import { medianOf } from './host-cooling.ts';
import { endMissing } from './host-missing.ts';

type PortMemory = NonNullable<HostLayerState['ib']>[string];

/**
 * The host's training network (InfiniBand / RoCE ports), one alert per port: `down`, a port seen
 * active is no longer; `degraded`, an active port trained at a rate below `rate_fraction` of its
 * active siblings' (same link layer) median and below its own best rate seen (a port never faster
 * than now, a 200G storage HCA beside 400G compute ones, is not degraded; one that trains slow from
 * its first reading is not seen); `errors`, a watched error counter rose by `increase`
 * or more since the last reading, or reached a ceiling in `saturate_at` (a saturating counter no longer
 * counts: it stays breaching while it stays there) (resolved after `quiet` without either).
 */
export const ibPort: Judge<'ib_port'> = {
  hostSample(ctx, rule) {
    const ports = ctx.data.ib_ports;
    if (!ports) return;
    const { host, at } = ctx;
    const ib = ((host.hostLayer ??= {}).ib ??= dict());
    const present = new Set<string>();
    for (const port of ports) {
      const name = `${port.device}/${port.port}`;
      const memory: PortMemory = (ib[name] ??= { active: false, counters: dict() });
      const key = `${rule.id}|${name}`;
      present.add(key);
      const judged = judgePort(rule, port, memory, ports, host.trackers[key]?.firing === true);
      if (judged === undefined || (!judged.breaching && host.trackers[key] === undefined)) continue;
      ctx.conditions.observe(host, key, rule, undefined, at, {
        breaching: judged.breaching,
        evidence: [ctx.id],
        summary: fill(rule.summary, { host: host.host, detail: `${name} ${judged.detail}` }),
        ...(judged.value !== undefined ? { value: judged.value } : {}),
      });
      const tracker = host.trackers[key];
      if (tracker && rule.check === 'errors') tracker.quietMs = rule.quiet;
    }
    forgetGonePorts(ib, ports);
    endMissing(ctx, rule, `${rule.id}|`, present, fill(rule.summary, { host: host.host, detail: 'port no longer reported' }));
  },
};

function judgePort(
  rule: RuleOf<'ib_port'>,
  port: IbPort,
  memory: PortMemory,
  ports: readonly IbPort[],
  firing: boolean,
): { breaching: boolean; detail: string; value?: number } | undefined {
  const active = port.state === 'active';
  switch (rule.check) {
    case 'down': {
      const wasActive = memory.active;
      if (active) memory.active = true;
      return { breaching: wasActive && !active, detail: `is ${port.state} (physical state ${port.phys_state})` };
    }
    case 'degraded': {
      if (!active || port.rate_gbps === null) return { breaching: false, detail: '' };
      const best = Math.max(memory.best_rate ?? 0, port.rate_gbps);
      memory.best_rate = best;
      const siblings: number[] = [];
      for (const other of ports) {
        if (other !== port && other.state === 'active' && other.rate_gbps !== null && other.link_layer === port.link_layer) siblings.push(other.rate_gbps);
      }
      const median = medianOf(siblings);
      // A port never faster than it is now (a 200G storage HCA beside 400G compute ones) is not degraded.
      const breaching = median !== undefined && port.rate_gbps < rule.rate_fraction * median && port.rate_gbps < best;
      return { breaching, value: port.rate_gbps, detail: `runs at ${port.rate_gbps} Gb/s, its siblings at ${median ?? '?'} Gb/s` };
    }
    case 'errors': {
      const rises: string[] = [];
      const saturated: string[] = [];
      let total = 0;
      for (const counter of rule.counters) {
        const now = port.counters[counter];
        if (now === undefined) continue;
        const before = memory.counters[counter];
        memory.counters[counter] = now;
        // At its ceiling (a saturating 16-bit counter stops at 65535): reached rising, or staying there while it fires, errors go on unseen.
        if (rule.saturate_at.includes(now) && before !== undefined && (now > before || (now === before && firing)))
          saturated.push(`${counter} saturated at ${now}`);
        // A counter that went down was reset (a driver reload): no rise.
        if (before !== undefined && now - before >= rule.increase) {
          rises.push(`${counter} +${now - before}`);
          total += now - before;
        }
      }
      if (rises.length === 0 && saturated.length > 0)
        return { breaching: true, detail: `error counters at their ceiling, errors no longer counted: ${saturated.join(', ')} (clear them: perfquery -x)` };
      return { breaching: rises.length > 0, value: total, detail: `error counters rising: ${rises.join(', ')}` };
    }
  }
}

/** Ports no longer reported are forgotten past the bound, so renamed devices cannot grow the state. */
function forgetGonePorts(ib: Record<string, PortMemory>, ports: readonly IbPort[]): void {
  const names = Object.keys(ib);
  if (names.length <= MAX_IB_PORTS_PER_SAMPLE) return;
  const present = new Set(ports.map((p) => `${p.device}/${p.port}`));
  for (const name of names) if (!present.has(name)) delete ib[name];
}
