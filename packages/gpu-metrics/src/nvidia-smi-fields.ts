import type { GpuMetrics } from '@gpualert/schema';

export type NumericMetric = Exclude<keyof GpuMetrics, 'uuid' | 'pci_bus' | 'name' | 'throttle' | 'remap_pending' | 'remap_failure' | 'index' | 'job'>;

/**
 * nvidia-smi `--query-gpu` field → metric. Several fields may feed one metric (newer and older
 * driver names); the first one the driver supports is asked for.
 */
export const NUMERIC_FIELDS: Readonly<Record<string, NumericMetric>> = {
  'utilization.gpu': 'util_pct',
  'utilization.memory': 'mem_util_pct',
  'memory.used': 'mem_used_mib',
  'memory.total': 'mem_total_mib',
  'temperature.gpu': 'temp_c',
  'temperature.memory': 'mem_temp_c',
  'power.draw': 'power_w',
  'power.draw.instant': 'power_w',
  'power.limit': 'power_limit_w',
  'clocks.sm': 'sm_clock_mhz',
  'clocks.current.sm': 'sm_clock_mhz',
  'clocks.mem': 'mem_clock_mhz',
  'clocks.current.memory': 'mem_clock_mhz',
  'fan.speed': 'fan_pct',
  'pcie.link.gen.current': 'pcie_gen',
  'pcie.link.gen.max': 'pcie_gen_max',
  'pcie.link.width.current': 'pcie_width',
  'pcie.link.width.max': 'pcie_width_max',
  'ecc.errors.corrected.volatile.total': 'ecc_sbe_volatile',
  'ecc.errors.uncorrected.volatile.total': 'ecc_dbe_volatile',
  'ecc.errors.corrected.aggregate.total': 'ecc_sbe_aggregate',
  'ecc.errors.uncorrected.aggregate.total': 'ecc_dbe_aggregate',
};

/** The throttle bitmask under its current and its older name. */
export const THROTTLE_MASK_FIELDS = ['clocks_event_reasons.active', 'clocks_throttle_reasons.active'] as const;

/** What the collector asks for, in order; each entry lists alternatives, newest first. */
export const QUERY_FIELDS: readonly (readonly string[])[] = [
  ['index'],
  ['uuid'],
  ['name'],
  ['pci.bus_id'],
  ['utilization.gpu'],
  ['utilization.memory'],
  ['memory.used'],
  ['memory.total'],
  ['temperature.gpu'],
  ['temperature.memory'],
  ['power.draw.instant', 'power.draw'],
  ['power.limit'],
  ['clocks.sm'],
  ['clocks.mem'],
  ['fan.speed'],
  ['pcie.link.gen.current'],
  ['pcie.link.gen.max'],
  ['pcie.link.width.current'],
  ['pcie.link.width.max'],
  ['ecc.errors.corrected.volatile.total'],
  ['ecc.errors.uncorrected.volatile.total'],
  ['ecc.errors.corrected.aggregate.total'],
  ['ecc.errors.uncorrected.aggregate.total'],
  ['remapped_rows.pending'],
  ['remapped_rows.failure'],
  [...THROTTLE_MASK_FIELDS],
];

/** Picks, for each wanted field, the first name the driver supports (from `--help-query-gpu`). */
export function chooseQueryFields(supported: ReadonlySet<string>): string[] {
  const chosen: string[] = [];
  for (const alternatives of QUERY_FIELDS) {
    const name = alternatives.find((a) => supported.has(a));
    if (name) chosen.push(name);
  }
  return chosen;
}

/** The field names `nvidia-smi --help-query-gpu` documents (lines like `"temperature.gpu"`). */
export function supportedQueryFields(helpText: string): Set<string> {
  const out = new Set<string>();
  for (const [, name] of helpText.matchAll(/^"([a-z_.0-9]+)"/gm)) if (name !== undefined) out.add(name);
  return out;
}
