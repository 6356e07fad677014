import type { NumericMetric } from './nvidia-smi-fields.ts';

/**
 * What a GPU can physically report, per metric: a value outside is a broken sensor, a sentinel
 * we do not know, or a hostile source, and becomes null (not judged) rather than a 1e308 °C
 * alert or a sample the schema refuses whole. Counters are whole and never negative.
 * Generous on purpose: the newest parts (GB200: 1,200 W, 192 GB) fit with room to spare.
 */
const RANGES: ReadonlyMap<NumericMetric, readonly [number, number]> = new Map<NumericMetric, readonly [number, number]>([
  ['util_pct', [0, 100]],
  ['mem_util_pct', [0, 100]],
  ['fan_pct', [0, 100]],
  ['mem_used_mib', [0, 4_194_304]], // 4 TiB
  ['mem_total_mib', [0, 4_194_304]],
  ['temp_c', [-40, 200]],
  ['mem_temp_c', [-40, 200]],
  ['power_w', [0, 5_000]],
  ['power_limit_w', [0, 5_000]],
  ['sm_clock_mhz', [0, 10_000]],
  ['mem_clock_mhz', [0, 50_000]],
  ['pcie_gen', [1, 8]],
  ['pcie_gen_max', [1, 8]],
  ['pcie_width', [1, 32]],
  ['pcie_width_max', [1, 32]],
]);

/** Counters: whole numbers from 0 to 2^53 − 1 (ECC counts, the last Xid, NVLink errors, processes). */
const COUNTERS: ReadonlySet<NumericMetric> = new Set<NumericMetric>([
  'ecc_sbe_volatile',
  'ecc_dbe_volatile',
  'ecc_sbe_aggregate',
  'ecc_dbe_aggregate',
  'xid_last',
  'nvlink_errors',
  'processes',
]);

/** `value` when a GPU could report it as `metric`, else null. */
export function plausible(metric: NumericMetric, value: number | null): number | null {
  if (value === null || !Number.isFinite(value)) return null;
  if (COUNTERS.has(metric)) return Number.isSafeInteger(value) && value >= 0 ? value : null;
  const range = RANGES.get(metric);
  if (range && (value < range[0] || value > range[1])) return null;
  return value;
}
