import { severityRank } from '@gpualert/schema';
import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';

/**
 * An uncorrected (or fatal) AER error of a PCIe switch or root port, with the GPUs below it
 * named: every one of them is about to fall off the bus (typically Xid 79 next). One alert per
 * port; latched or resolved after `quiet`.
 */
export const pciePort: Judge<'pcie_port'> = {
  kernel(ctx, rule) {
    const { host, at, event, id } = ctx;
    const port = event.port;
    if (event.kind !== 'pcie_aer' || port === undefined || severityRank(event.severity) < severityRank(rule.min_severity)) return false;
    const indexes = port.gpu_indexes ?? [];
    const buses = port.gpus ?? [];
    const below = indexes.length > 0 ? `GPU ${indexes.join(', ')}` : buses.length > 0 ? `GPUs at ${buses.join(', ')}` : 'no GPU known';
    const detail = `PCIe port ${port.address}: ${event.meaning ?? 'uncorrected AER error'}; below it: ${below}`;
    const key = `${rule.id}|${port.address}`;
    ctx.conditions.observe(
      host,
      key,
      { ...rule, action: event.action ?? rule.action },
      undefined,
      at,
      {
        breaching: true,
        severity: event.severity,
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
