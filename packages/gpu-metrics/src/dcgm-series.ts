import { canonicalPciBus, MAX_GPU_INDEX, throttleReasonsFromMask, type GpuMetrics } from '@gpualert/schema';
import { emptyMetrics } from './nvidia-smi-csv.ts';
import type { NumericMetric } from './nvidia-smi-fields.ts';
import { plausible } from './physical-range.ts';
import { isDcgmBlank } from './unavailable.ts';

/** dcgm-exporter's gauge names, each onto ours (docs/architecture.md, "Metric names"). */
const GAUGES: ReadonlyMap<string, NumericMetric> = new Map<string, NumericMetric>([
  ['DCGM_FI_DEV_GPU_UTIL', 'util_pct'],
  ['DCGM_FI_DEV_MEM_COPY_UTIL', 'mem_util_pct'],
  ['DCGM_FI_DEV_FB_USED', 'mem_used_mib'],
  ['DCGM_FI_DEV_GPU_TEMP', 'temp_c'],
  ['DCGM_FI_DEV_MEMORY_TEMP', 'mem_temp_c'],
  ['DCGM_FI_DEV_POWER_USAGE', 'power_w'],
  ['DCGM_FI_DEV_POWER_MGMT_LIMIT', 'power_limit_w'],
  ['DCGM_FI_DEV_SM_CLOCK', 'sm_clock_mhz'],
  ['DCGM_FI_DEV_MEM_CLOCK', 'mem_clock_mhz'],
  ['DCGM_FI_DEV_FAN_SPEED', 'fan_pct'],
  ['DCGM_FI_DEV_PCIE_LINK_GEN', 'pcie_gen'],
  ['DCGM_FI_DEV_PCIE_LINK_WIDTH', 'pcie_width'],
  ['DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'ecc_sbe_volatile'],
  ['DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'ecc_dbe_volatile'],
  ['DCGM_FI_DEV_ECC_SBE_AGG_TOTAL', 'ecc_sbe_aggregate'],
  ['DCGM_FI_DEV_ECC_DBE_AGG_TOTAL', 'ecc_dbe_aggregate'],
  // The code of the last Xid, not a count: it never resets, so the engine watches it change.
  ['DCGM_FI_DEV_XID_ERRORS', 'xid_last'],
]);

const NVLINK_ERRORS = /^DCGM_FI_DEV_NVLINK_.*_ERROR_COUNT_TOTAL$/;

/** A series' labels, however they were read: a Map, never an object keyed by what an exporter sent. */
export type SeriesLabels = ReadonlyMap<string, string>;

/** The labels that name the machine, in order: dcgm-exporter's old `Hostname`, its new `hostname`. */
export const DCGM_HOST_LABELS: readonly string[] = ['Hostname', 'hostname'];

/**
 * Gathers dcgm-exporter series, one at a time, into GPUs per host: the same mapping whether the
 * series came from an exporter's text or from Prometheus' HTTP API. DCGM's blank sentinels become
 * null; series without a `gpu` label (per-host or per-link series) are skipped.
 */
export class DcgmSeriesAccumulator {
  private readonly hosts = new Map<string, Map<number, GpuMetrics & { fbFree?: number }>>();

  /**
   * `host` is the machine the series belongs to, chosen by the caller (label, override or instance).
   * False when the series names a GPU that cannot be one (`gpu="-1"`, `"0x1"`, `"300"`), for the caller to count.
   */
  add(host: string, name: string, labels: SeriesLabels, value: number): boolean {
    if (!name.startsWith('DCGM_FI_')) return true;
    const gpuLabel = labels.get('gpu');
    if (gpuLabel === undefined) return true; // a per-host or per-link series: not ours to map
    if (!/^\d{1,3}$/.test(gpuLabel) || Number(gpuLabel) > MAX_GPU_INDEX) return false;
    const index = Number(gpuLabel);
    let gpus = this.hosts.get(host);
    if (!gpus) this.hosts.set(host, (gpus = new Map()));
    let gpu = gpus.get(index);
    if (!gpu) gpus.set(index, (gpu = emptyMetrics(index)));
    gpu.uuid ??= labels.get('UUID') ?? labels.get('uuid') ?? null;
    gpu.name ??= labels.get('modelName') ?? null;
    const pci = labels.get('pci_bus_id');
    if (gpu.pci_bus === null && pci) gpu.pci_bus = canonicalPciBus(pci);
    const blank = isDcgmBlank(value);
    const metric = GAUGES.get(name);
    if (metric) {
      gpu[metric] = blank ? null : plausible(metric, value);
    } else if (name === 'DCGM_FI_DEV_FB_FREE') {
      const free = blank ? null : plausible('mem_total_mib', value);
      if (free !== null) gpu.fbFree = free;
    } else if (name === 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS' || name === 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS') {
      gpu.throttle = blank ? null : throttleReasonsFromMask(value);
    } else if (name === 'DCGM_FI_DEV_ROW_REMAP_PENDING') {
      gpu.remap_pending = blank ? null : value > 0;
    } else if (name === 'DCGM_FI_DEV_ROW_REMAP_FAILURE') {
      gpu.remap_failure = blank ? null : value > 0;
    } else if (NVLINK_ERRORS.test(name) && !blank && plausible('nvlink_errors', value) !== null) {
      gpu.nvlink_errors = plausible('nvlink_errors', (gpu.nvlink_errors ?? 0) + value);
    }
    return true;
  }

  /** How many hosts so far (for callers that bound it). */
  get hostCount(): number {
    return this.hosts.size;
  }

  has(host: string): boolean {
    return this.hosts.has(host);
  }

  /** GPUs per host, each host's GPUs in index order; memory total from used + free when both came. */
  result(): Map<string, GpuMetrics[]> {
    const out = new Map<string, GpuMetrics[]>();
    for (const [host, gpus] of this.hosts) {
      out.set(
        host,
        [...gpus.values()]
          .sort((a, b) => a.index - b.index)
          .map(({ fbFree, ...gpu }) => ({
            ...gpu,
            mem_total_mib: gpu.mem_used_mib !== null && fbFree !== undefined ? gpu.mem_used_mib + fbFree : null,
          })),
      );
    }
    return out;
  }
}

/** The host a series names: the first of `hostLabels` it carries, else `fallback`. */
export function hostOfSeries(labels: SeriesLabels, hostLabels: readonly string[], fallback: string): string {
  for (const name of hostLabels) {
    const value = labels.get(name);
    if (value) return value;
  }
  return fallback;
}
