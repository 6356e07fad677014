import { z } from 'zod';
import { MAX_GPU_INDEX } from './bounds.ts';
import { JobAttribution } from './job-attribution.ts';
import { PciBus } from './pci-bus.ts';

/** Throttle (clocks event) reasons, in bitmask order: bit 0 is `gpu_idle`. */
export const THROTTLE_REASONS = [
  'gpu_idle',
  'applications_clocks_setting',
  'sw_power_cap',
  'hw_slowdown',
  'sync_boost',
  'sw_thermal_slowdown',
  'hw_thermal_slowdown',
  'hw_power_brake_slowdown',
  'display_clock_setting',
] as const;
export const ThrottleReason = z.enum(THROTTLE_REASONS);
export type ThrottleReason = z.infer<typeof ThrottleReason>;

/** A value the source does not support is null, never 0; a missing field reads as null. */
const gauge = z.number().finite().nullable().default(null);
const count = z.number().int().nonnegative().nullable().default(null);
const flag = z.boolean().nullable().default(null);

/** One GPU in one scrape, in the one vocabulary every source maps to (DESIGN.md). */
/** A GPU's index on its machine, 0 to `MAX_GPU_INDEX`. */
export const GpuIndex = z.number().int().nonnegative().max(MAX_GPU_INDEX);

export const GpuMetrics = z.object({
  index: GpuIndex,
  uuid: z.string().min(1).nullable().default(null),
  pci_bus: PciBus.nullable().default(null),
  name: z.string().nullable().default(null),
  util_pct: gauge,
  mem_util_pct: gauge,
  mem_used_mib: gauge,
  mem_total_mib: gauge,
  temp_c: gauge,
  mem_temp_c: gauge,
  power_w: gauge,
  power_limit_w: gauge,
  sm_clock_mhz: gauge,
  mem_clock_mhz: gauge,
  fan_pct: gauge,
  pcie_gen: count,
  pcie_gen_max: count,
  pcie_width: count,
  pcie_width_max: count,
  ecc_sbe_volatile: count,
  ecc_dbe_volatile: count,
  ecc_sbe_aggregate: count,
  ecc_dbe_aggregate: count,
  remap_pending: flag,
  remap_failure: flag,
  throttle: z.array(ThrottleReason).nullable().default(null),
  xid_last: count,
  nvlink_errors: count,
  processes: count,
  /** The job its compute processes belong to (Slurm, Kubernetes, or a plain process's user and command); absent when none is known. */
  job: JobAttribution.optional(),
});
export type GpuMetrics = z.infer<typeof GpuMetrics>;

/** The metric names, for parsers that map source fields onto them (`job` is who runs there, not a metric). */
export const METRIC_NAMES = Object.keys(GpuMetrics.shape).filter((k) => k !== 'job') as readonly Exclude<keyof GpuMetrics, 'job'>[];

/** Decodes nvidia-smi's / DCGM's throttle bitmask into reason names (unknown bits ignored). */
export function throttleReasonsFromMask(mask: number): ThrottleReason[] {
  return THROTTLE_REASONS.filter((_, bit) => (mask & (1 << bit)) !== 0);
}
