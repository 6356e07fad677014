import { canonicalPciBus, throttleReasonsFromMask, type GpuMetrics } from '@gpualert/schema';
import { emptyMetrics } from './nvidia-smi-csv.ts';
import type { NumericMetric } from './nvidia-smi-fields.ts';
import { isDcgmBlank } from './unavailable.ts';

const GAUGES: Readonly<Record<string, NumericMetric>> = {
  DCGM_FI_DEV_GPU_UTIL: 'util_pct',
  DCGM_FI_DEV_MEM_COPY_UTIL: 'mem_util_pct',
  DCGM_FI_DEV_FB_USED: 'mem_used_mib',
  DCGM_FI_DEV_GPU_TEMP: 'temp_c',
  DCGM_FI_DEV_MEMORY_TEMP: 'mem_temp_c',
  DCGM_FI_DEV_POWER_USAGE: 'power_w',
  DCGM_FI_DEV_POWER_MGMT_LIMIT: 'power_limit_w',
  DCGM_FI_DEV_SM_CLOCK: 'sm_clock_mhz',
  DCGM_FI_DEV_MEM_CLOCK: 'mem_clock_mhz',
  DCGM_FI_DEV_FAN_SPEED: 'fan_pct',
  DCGM_FI_DEV_PCIE_LINK_GEN: 'pcie_gen',
  DCGM_FI_DEV_PCIE_LINK_WIDTH: 'pcie_width',
  DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: 'ecc_sbe_volatile',
  DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: 'ecc_dbe_volatile',
  DCGM_FI_DEV_ECC_SBE_AGG_TOTAL: 'ecc_sbe_aggregate',
  DCGM_FI_DEV_ECC_DBE_AGG_TOTAL: 'ecc_dbe_aggregate',
  /** The code of the last Xid, not a count: it never resets, so the engine watches it change. */
  DCGM_FI_DEV_XID_ERRORS: 'xid_last',
};

const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?\s*$/;
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export interface DcgmParse {
  /** GPUs per host, from the `Hostname`/`hostname` label or the host given. */
  readonly hosts: Map<string, GpuMetrics[]>;
  readonly problems: { readonly line: number; readonly text: string }[];
}

/**
 * Parses a DCGM exporter's Prometheus text. Accepts the old `Hostname` and the new `hostname`
 * label; DCGM's blank sentinels become null. `host` overrides the label (the exporter's label
 * is often a pod name, not the machine).
 */
export function parseDcgmText(text: string, host?: string): DcgmParse {
  const hosts = new Map<string, Map<number, GpuMetrics & { fbFree?: number }>>();
  const problems: { line: number; text: string }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) {
      problems.push({ line: i + 1, text: line });
      continue;
    }
    const [, name, labelText, rawValue] = match;
    if (!name!.startsWith('DCGM_FI_')) continue;
    const labels: Record<string, string> = {};
    for (const l of (labelText ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!;
    const index = Number(labels.gpu);
    if (!Number.isInteger(index) || index < 0) continue; // not a per-GPU series
    const hostName = host ?? labels.Hostname ?? labels.hostname ?? 'unknown';
    const value = Number(rawValue);
    let gpus = hosts.get(hostName);
    if (!gpus) hosts.set(hostName, (gpus = new Map()));
    let gpu = gpus.get(index);
    if (!gpu) gpus.set(index, (gpu = emptyMetrics(index)));
    gpu.uuid ??= labels.UUID ?? labels.uuid ?? null;
    gpu.name ??= labels.modelName ?? null;
    if (gpu.pci_bus === null && labels.pci_bus_id) gpu.pci_bus = canonicalPciBus(labels.pci_bus_id);
    const blank = isDcgmBlank(value);
    const metric = GAUGES[name!];
    if (metric) {
      gpu[metric] = blank ? null : value;
    } else if (name === 'DCGM_FI_DEV_FB_FREE') {
      if (!blank) gpu.fbFree = value;
    } else if (name === 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS' || name === 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS') {
      gpu.throttle = blank ? null : throttleReasonsFromMask(value);
    } else if (name === 'DCGM_FI_DEV_ROW_REMAP_PENDING') {
      gpu.remap_pending = blank ? null : value > 0;
    } else if (name === 'DCGM_FI_DEV_ROW_REMAP_FAILURE') {
      gpu.remap_failure = blank ? null : value > 0;
    } else if (/^DCGM_FI_DEV_NVLINK_.*_ERROR_COUNT_TOTAL$/.test(name!) && !blank) {
      gpu.nvlink_errors = (gpu.nvlink_errors ?? 0) + value;
    }
  }
  const out = new Map<string, GpuMetrics[]>();
  for (const [hostName, gpus] of hosts) {
    out.set(
      hostName,
      [...gpus.values()]
        .sort((a, b) => a.index - b.index)
        .map(({ fbFree, ...gpu }) => ({
          ...gpu,
          mem_total_mib: gpu.mem_used_mib !== null && fbFree !== undefined ? gpu.mem_used_mib + fbFree : null,
        })),
    );
  }
  return { hosts: out, problems };
}
