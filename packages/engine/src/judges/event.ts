import { severityRank, type AlertData, type KernelEventData, type Severity } from '@gpualert/schema';
import { fill } from '../conditions.ts';
import { newGpuState } from '../engine-state.ts';
import type { Judge } from '../judge.ts';
import type { RuleOf } from '../rule-set.ts';
import { lostKey } from './absence.ts';

/** Which kernel event kinds are hardware faults that stay firing until recovery is seen. */
const HARDWARE_CAUSES = new Set(['memory', 'pcie', 'nvlink', 'firmware']);
const EVENT_CATEGORY: Record<KernelEventData['kind'], AlertData['category']> = {
  xid: 'xid',
  sxid: 'nvlink',
  nvlink: 'nvlink',
  pcie_aer: 'pcie',
  fallen_off_bus: 'fallen_off_bus',
  ecc: 'ecc',
  row_remap: 'row_remap',
  oom_kill: 'kernel',
  thermal: 'thermal',
  gsp: 'xid',
  other_gpu: 'kernel',
  host: 'kernel',
};
/** Xid codes whose recent times one GPU keeps: a failing GPU shows a handful; made-up codes must not grow it. */
export const MAX_XID_CODES_PER_GPU = 32;
/** Times of one Xid code one GPU keeps. */
const TIMES_PER_XID = 20;

/**
 * A kernel event of the rule's kinds (and Xid codes): hardware faults latch until recovery,
 * application-level ones resolve after `quiet`; the same code `repeat.count` times on one GPU
 * escalates; a GPU fallen off the bus (Xid 79) is the GPU-absence alert.
 */
export const event: Judge<'event'> = {
  kernel(ctx, rule) {
    const { host, at, event, gpu, id } = ctx;
    if (!rule.kinds.includes(event.kind) || (rule.xids && (event.xid === undefined || !rule.xids.includes(event.xid)))) return false;
    const lost = (event.kind === 'xid' && event.xid === 79) || event.kind === 'fallen_off_bus';
    if (lost && (gpu !== undefined || event.pci_bus !== undefined)) {
      const absent = ctx.bound.rules.find((r): r is RuleOf<'absence'> => r.kind === 'absence' && r.scope === 'gpu');
      if (absent) {
        const entry = event.xid !== undefined ? ctx.catalog.lookup(event.xid) : undefined;
        ctx.conditions.observe(
          host,
          lostKey(gpu ?? -1, event.pci_bus),
          absent,
          gpu,
          at,
          {
            breaching: true,
            severity: 'critical',
            evidence: [id],
            summary: fill(absent.summary, {
              host: host.host,
              gpu: gpu ?? event.pci_bus,
              detail: event.xid !== undefined ? `Xid ${event.xid}: ${entry?.meaning ?? ''}` : 'fallen off the bus',
            }),
            description: event.message,
          },
          true,
        );
        return true;
      }
    }
    let severity: Severity = event.severity;
    let note = '';
    const where = gpu !== undefined ? String(gpu) : (event.pci_bus ?? '');
    const key = `${rule.id}|${event.kind}|${where}|${event.xid ?? ''}`;
    const { repeat } = rule;
    if (repeat && event.xid !== undefined && gpu !== undefined) {
      const gs = (host.gpus[gpu] ??= newGpuState()); // made already, by noteKernelEvidence
      const times = (gs.xids[event.xid] ?? []).filter((t) => at - t <= repeat.within);
      times.push(at); // one burst is one occurrence, however many lines it printed
      gs.xids[event.xid] = times.slice(-TIMES_PER_XID);
      forgetStaleXids(gs.xids);
      if (times.length >= repeat.count && severityRank(severity) < severityRank(repeat.severity)) {
        severity = repeat.severity;
        note = ` — ${times.length} times on this GPU within ${Math.round(repeat.within / 60_000)} min: suspect the hardware`;
      }
    }
    const entry = event.kind === 'xid' && event.xid !== undefined ? ctx.catalog.lookup(event.xid) : undefined;
    const hardware = severity === 'critical' || (entry !== undefined && HARDWARE_CAUSES.has(entry.cause) && severity !== 'warning');
    const what =
      event.kind === 'xid'
        ? `Xid ${event.xid}: ${event.meaning ?? ''}`
        : event.kind === 'sxid'
          ? `SXid ${event.xid}: ${event.meaning ?? ''}`
          : (event.meaning ?? event.kind);
    const detail = `${what}${gpu !== undefined ? ` on GPU ${gpu}` : event.pci_bus ? ` at ${event.pci_bus}` : ''}${(event.count ?? 1) > 1 ? ` (×${event.count})` : ''}${note}`;
    const category = event.kind === 'xid' && entry ? xidCategory(entry.cause) : EVENT_CATEGORY[event.kind];
    ctx.conditions.observe(
      host,
      key,
      { ...rule, category, action: event.action ?? rule.action },
      gpu,
      at,
      {
        breaching: true,
        severity,
        summary: fill(rule.summary, { host: host.host, detail }),
        description: event.message,
        evidence: [id],
      },
      hardware,
    );
    const tracker = host.trackers[key];
    if (tracker && !hardware) tracker.quietMs = rule.quiet;
    return true;
  },
};

/** Past the bound, the code seen least recently goes. */
function forgetStaleXids(xids: Record<string, number[]>): void {
  const codes = Object.entries(xids);
  if (codes.length <= MAX_XID_CODES_PER_GPU) return;
  let stalest: string | undefined;
  let stalestAt = 0;
  for (const [code, times] of codes) {
    const last = times.at(-1) ?? 0;
    if (stalest === undefined || last < stalestAt) [stalest, stalestAt] = [code, last];
  }
  if (stalest !== undefined) delete xids[stalest];
}

function xidCategory(cause: string): AlertData['category'] {
  return cause === 'memory' ? 'ecc' : cause === 'nvlink' ? 'nvlink' : cause === 'pcie' ? 'pcie' : cause === 'thermal' ? 'thermal' : 'xid';
}
