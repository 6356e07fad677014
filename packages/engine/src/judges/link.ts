import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/** A PCIe link below its generation or width under load (links downtrain at idle to save power: not a fault). */
export const link: Judge<'link'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const util = gpu.util_pct;
    // Keep a firing link alert until it is seen healthy under load.
    if (util === null || util < rule.util_above) return;
    const key = ruleKey(rule.id, gpu.index);
    const genLow = gpu.pcie_gen !== null && gpu.pcie_gen_max !== null && gpu.pcie_gen < gpu.pcie_gen_max;
    const widthLow = gpu.pcie_width !== null && gpu.pcie_width_max !== null && gpu.pcie_width < gpu.pcie_width_max;
    if (!genLow && !widthLow && !host.trackers[key]) return;
    const detail = `Gen${gpu.pcie_gen ?? '?'} x${gpu.pcie_width ?? '?'} of Gen${gpu.pcie_gen_max ?? '?'} x${gpu.pcie_width_max ?? '?'}`;
    observeMetric(ctx, key, rule, genLow || widthLow, gpu.pcie_width ?? undefined, fill(rule.summary, { host: host.host, gpu: gpu.index, detail }));
  },
};
