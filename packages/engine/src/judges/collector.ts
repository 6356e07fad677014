import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { hostKey } from './keys.ts';

/** The collector itself failing (nvidia-smi errors) several samples in a row; a GPU lost is critical. */
export const collector: Judge<'collector'> = {
  beforeGpus(ctx, rule) {
    const { host } = ctx;
    const { error } = ctx.sample;
    const key = hostKey(rule.id);
    const failing = error !== undefined && !(error.code === 'gpu_lost' && error.pci_bus);
    host.collectorErrors = failing ? host.collectorErrors + 1 : 0;
    if (host.collectorErrors === 0 && !host.trackers[key]) return;
    ctx.conditions.observe(host, key, rule, undefined, ctx.at, {
      breaching: host.collectorErrors >= rule.consecutive,
      severity: error?.code === 'gpu_lost' ? 'critical' : rule.severity,
      summary: fill(rule.summary, { host: host.host, detail: error?.message ?? '' }),
      evidence: ctx.evidence,
    });
  },
};
