import { fill } from '../conditions.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/** A working GPU (util at least `util_at_least`) whose job uses little of its memory: an oversized instance. */
export const lowMemoryUse: Judge<'low_memory_use'> = {
  gpu(ctx, rule) {
    const { gpu, host } = ctx;
    const key = ruleKey(rule.id, gpu.index);
    const used = gpu.mem_used_mib !== null && gpu.mem_total_mib ? (gpu.mem_used_mib / gpu.mem_total_mib) * 100 : null;
    const breaching = (gpu.processes ?? 0) > 0 && used !== null && used < rule.mem_below_pct && (gpu.util_pct ?? 0) >= rule.util_at_least;
    if (!breaching && !host.trackers[key]) return;
    observeMetric(ctx, key, rule, breaching, used ?? undefined, fill(rule.summary, { host: host.host, gpu: gpu.index, value: used ?? undefined }));
  },
};
