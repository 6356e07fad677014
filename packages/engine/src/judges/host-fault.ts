import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';

/**
 * A fault of the host's own kernel (`host` kernel events): uncorrectable memory errors, oopses,
 * BUGs, general protection faults, hung tasks, soft lockups, the NMI watchdog. One alert per
 * fault kind; latched (drain the host) or resolved after `quiet` without another.
 */
export const hostFault: Judge<'host_fault'> = {
  kernel(ctx, rule) {
    const { host, at, event, id } = ctx;
    if (event.kind !== 'host' || event.host_fault === undefined || !rule.faults.includes(event.host_fault)) return false;
    const key = `${rule.id}|${event.host_fault}`;
    const detail = `${event.meaning ?? event.host_fault}${(event.count ?? 1) > 1 ? ` (×${event.count})` : ''}`;
    ctx.conditions.observe(
      host,
      key,
      { ...rule, action: event.action ?? rule.action },
      undefined,
      at,
      {
        breaching: true,
        evidence: [id],
        summary: fill(rule.summary, { host: host.host, detail }),
        description: event.message,
      },
      rule.latch,
    );
    const tracker = host.trackers[key];
    if (tracker && !rule.latch) tracker.quietMs = rule.quiet;
    return true;
  },
};
