import { canonicalPciBus, MAX_GPU_INDEX, must, throttleReasonsFromMask, THROTTLE_REASONS, type GpuMetrics, type ThrottleReason } from '@gpualert/schema';
import { NUMERIC_FIELDS, THROTTLE_MASK_FIELDS } from './nvidia-smi-fields.ts';
import { plausible } from './physical-range.ts';
import { isUnavailable } from './unavailable.ts';

export interface NvidiaSmiParse {
  /** One array of GPUs per scrape: a new scrape starts where a GPU index repeats. */
  readonly samples: GpuMetrics[][];
  /** Lines that were not data rows: nvidia-smi's error messages, with their line number. */
  readonly problems: { readonly line: number; readonly text: string }[];
}

/** A line that says a GPU is gone; its address when it names one. */
export function lostGpuMessage(text: string): { pciBus: string | null } | undefined {
  const handle = /Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)?/.exec(text);
  if (handle) return { pciBus: handle[1] ? canonicalPciBus(handle[1].replace(/:$/, '')) : null };
  if (/fallen off the bus|GPU is lost|No devices were found/i.test(text)) return { pciBus: null };
  return undefined;
}

const UNIT = / \[[^\]]+\]$/;

function numeric(cell: string): number | null {
  if (isUnavailable(cell)) return null;
  const value = Number.parseFloat(cell); // "69.85 W", "0 %", "81559 MiB": the number before the unit
  return Number.isFinite(value) ? value : null;
}

function yesNo(cell: string): boolean | null {
  if (cell === 'Yes') return true;
  if (cell === 'No') return false;
  return null;
}

/**
 * Parses `nvidia-smi --query-gpu=… --format=csv` output, with or without units; headerless
 * output needs the field list it was asked with. Never throws: what is not a row is a problem.
 */
export function parseNvidiaSmiCsv(text: string, fields?: readonly string[]): NvidiaSmiParse {
  const lines = text.split('\n');
  let header = fields ? [...fields] : undefined;
  const samples: GpuMetrics[][] = [];
  const problems: { line: number; text: string }[] = [];
  let current: GpuMetrics[] = [];
  let seen = new Set<number>();
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') continue;
    const cells = line.split(', ').map((c) => c.trim());
    if (!header) {
      if (cells.includes('index') || cells.some((c) => c.startsWith('index ') || c === 'uuid')) {
        header = cells.map((c) => c.replace(UNIT, ''));
        continue;
      }
      problems.push({ line: i + 1, text: line });
      continue;
    }
    if (cells.length !== header.length) {
      problems.push({ line: i + 1, text: line });
      continue;
    }
    const gpu = rowToMetrics(header, cells);
    if (!gpu) {
      problems.push({ line: i + 1, text: line });
      continue;
    }
    if (seen.has(gpu.index)) {
      samples.push(current);
      current = [];
      seen = new Set();
    }
    seen.add(gpu.index);
    current.push(gpu);
  }
  if (current.length > 0) samples.push(current);
  return { samples, problems };
}

const MASK_FIELDS: ReadonlySet<string> = new Set(THROTTLE_MASK_FIELDS);
const REASONS: ReadonlyMap<string, ThrottleReason> = new Map(THROTTLE_REASONS.map((r) => [r, r]));

function rowToMetrics(header: readonly string[], cells: readonly string[]): GpuMetrics | undefined {
  const gpu: GpuMetrics = emptyMetrics(-1);
  let mask: number | null = null;
  const individual = new Set<ThrottleReason>();
  let sawIndividual = false;
  for (const [c, field] of header.entries()) {
    const cell = must(cells[c], 'the caller checked the row is as long as the header');
    // The header is the input's words: only nvidia-smi's own field names map to a metric.
    const metric = Object.hasOwn(NUMERIC_FIELDS, field) ? NUMERIC_FIELDS[field] : undefined;
    if (metric) {
      if (gpu[metric] === null) gpu[metric] = plausible(metric, numeric(cell));
      continue;
    }
    switch (field) {
      case 'index': {
        const index = numeric(cell);
        if (index === null || !Number.isInteger(index) || index < 0 || index > MAX_GPU_INDEX) return undefined;
        gpu.index = index;
        break;
      }
      case 'uuid':
        gpu.uuid = isUnavailable(cell) ? null : cell;
        break;
      case 'name':
        gpu.name = isUnavailable(cell) ? null : cell;
        break;
      case 'pci.bus_id':
        gpu.pci_bus = canonicalPciBus(cell);
        break;
      case 'remapped_rows.pending':
        gpu.remap_pending = yesNo(cell);
        break;
      case 'remapped_rows.failure':
        gpu.remap_failure = yesNo(cell);
        break;
      default:
        if (MASK_FIELDS.has(field)) {
          if (/^0x[0-9a-fA-F]+$/.test(cell)) mask = Number.parseInt(cell.slice(2), 16);
        } else {
          const name = /^clocks_(?:event|throttle)_reasons\.([a-z_]+)$/.exec(field)?.[1];
          const reason = name === undefined ? undefined : REASONS.get(name);
          if (reason !== undefined && !isUnavailable(cell)) {
            sawIndividual = true;
            if (cell === 'Active') individual.add(reason);
          }
        }
    }
  }
  if (gpu.index < 0) return undefined;
  // The bitmask is authoritative; the per-reason columns serve drivers that lack it.
  if (mask !== null) gpu.throttle = throttleReasonsFromMask(mask);
  else if (sawIndividual) gpu.throttle = THROTTLE_REASONS.filter((r) => individual.has(r));
  return gpu;
}

export function emptyMetrics(index: number): GpuMetrics {
  return {
    index,
    uuid: null,
    pci_bus: null,
    name: null,
    util_pct: null,
    mem_util_pct: null,
    mem_used_mib: null,
    mem_total_mib: null,
    temp_c: null,
    mem_temp_c: null,
    power_w: null,
    power_limit_w: null,
    sm_clock_mhz: null,
    mem_clock_mhz: null,
    fan_pct: null,
    pcie_gen: null,
    pcie_gen_max: null,
    pcie_width: null,
    pcie_width_max: null,
    ecc_sbe_volatile: null,
    ecc_dbe_volatile: null,
    ecc_sbe_aggregate: null,
    ecc_dbe_aggregate: null,
    remap_pending: null,
    remap_failure: null,
    throttle: null,
    xid_last: null,
    nvlink_errors: null,
    processes: null,
  };
}

/** `--query-compute-apps=gpu_uuid,pid,…`: how many processes each GPU runs. */
export function countComputeApps(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const first = lines[0]?.split(', ') ?? [];
  const hasHeader = first.some((c) => c.startsWith('gpu_uuid') || c.startsWith('pid'));
  const uuidColumn = hasHeader ? first.findIndex((c) => c.startsWith('gpu_uuid')) : 0;
  for (const line of hasHeader ? lines.slice(1) : lines) {
    const uuid = line.split(', ')[uuidColumn]?.trim();
    if (uuid && uuid.startsWith('GPU-')) counts.set(uuid, (counts.get(uuid) ?? 0) + 1);
  }
  return counts;
}
