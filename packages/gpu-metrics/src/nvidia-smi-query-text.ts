import { canonicalPciBus, MAX_GPUS_PER_SAMPLE, THROTTLE_REASONS, type GpuMetrics, type ThrottleReason } from '@gpualert/schema';
import { emptyMetrics, MAX_CSV_LINES, UnreadNotes, type Unread } from './nvidia-smi-csv.ts';
import type { NumericMetric } from './nvidia-smi-fields.ts';
import { plausible } from './physical-range.ts';
import { isUnavailable } from './unavailable.ts';

export interface NvidiaSmiQueryParse {
  /** One array of GPUs per `==============NVSMI LOG==============` (a `-q -l` loop prints several). */
  readonly samples: GpuMetrics[][];
  /** What the text holds that could not be read, each said once. */
  readonly unread: readonly Unread[];
}

/**
 * Where each metric is in `nvidia-smi -q`, as section/…/label below the `GPU <bus id>` line;
 * alternatives newest first (drivers before 525 say `Power Readings`, before 2014 `Temperature/Gpu`).
 */
const NUMERIC_LABELS: readonly (readonly [NumericMetric, readonly string[]])[] = [
  ['util_pct', ['Utilization/Gpu']],
  ['mem_util_pct', ['Utilization/Memory']],
  ['mem_used_mib', ['FB Memory Usage/Used']],
  ['mem_total_mib', ['FB Memory Usage/Total']],
  ['temp_c', ['Temperature/GPU Current Temp', 'Temperature/Gpu']],
  ['mem_temp_c', ['Temperature/Memory Current Temp']],
  [
    'power_w',
    ['GPU Power Readings/Instantaneous Power Draw', 'GPU Power Readings/Power Draw', 'Power Readings/Instantaneous Power Draw', 'Power Readings/Power Draw'],
  ],
  ['power_limit_w', ['GPU Power Readings/Current Power Limit', 'Power Readings/Power Limit', 'Power Readings/Enforced Power Limit']],
  ['sm_clock_mhz', ['Clocks/SM']],
  ['mem_clock_mhz', ['Clocks/Memory']],
  ['fan_pct', ['Fan Speed']],
  ['pcie_gen', ['PCI/GPU Link Info/PCIe Generation/Current']],
  ['pcie_gen_max', ['PCI/GPU Link Info/PCIe Generation/Max']],
  ['pcie_width', ['PCI/GPU Link Info/Link Width/Current']],
  ['pcie_width_max', ['PCI/GPU Link Info/Link Width/Max']],
];

/** ECC: SRAM plus DRAM (the chip's total) on current drivers, single/double bit on older ones. */
const ECC: readonly (readonly [NumericMetric, readonly string[], string])[] = [
  ['ecc_sbe_volatile', ['ECC Errors/Volatile/SRAM Correctable', 'ECC Errors/Volatile/DRAM Correctable'], 'ECC Errors/Volatile/Single Bit/Total'],
  ['ecc_dbe_volatile', ['ECC Errors/Volatile/SRAM Uncorrectable', 'ECC Errors/Volatile/DRAM Uncorrectable'], 'ECC Errors/Volatile/Double Bit/Total'],
  ['ecc_sbe_aggregate', ['ECC Errors/Aggregate/SRAM Correctable', 'ECC Errors/Aggregate/DRAM Correctable'], 'ECC Errors/Aggregate/Single Bit/Total'],
  ['ecc_dbe_aggregate', ['ECC Errors/Aggregate/SRAM Uncorrectable', 'ECC Errors/Aggregate/DRAM Uncorrectable'], 'ECC Errors/Aggregate/Double Bit/Total'],
];

/** The throttle reasons' labels under `Clocks Event Reasons` (`Clocks Throttle Reasons` before 535). */
const REASON_LABELS: ReadonlyMap<string, ThrottleReason> = new Map<string, ThrottleReason>([
  ['Idle', 'gpu_idle'],
  ['Applications Clocks Setting', 'applications_clocks_setting'],
  ['SW Power Cap', 'sw_power_cap'],
  ['HW Slowdown', 'hw_slowdown'],
  ['HW Thermal Slowdown', 'hw_thermal_slowdown'],
  ['HW Power Brake Slowdown', 'hw_power_brake_slowdown'],
  ['Sync Boost', 'sync_boost'],
  ['SW Thermal Slowdown', 'sw_thermal_slowdown'],
  ['Display Clock Setting', 'display_clock_setting'],
]);

function numeric(value: string | undefined): number | null {
  if (value === undefined || isUnavailable(value) || value === 'Not Available') return null;
  const number = Number.parseFloat(value);
  return Number.isFinite(number) ? number : null;
}

/** One GPU's `label path → value` as printed. */
type Block = { bus: string; line: number; values: Map<string, string> };

/**
 * Reads `nvidia-smi -q` (also `-q -d …` sections and `-q -l` loops): each `GPU <bus id>` line
 * starts a GPU, known by that bus id and its UUID and numbered by its place (nvidia-smi lists GPUs
 * in index order; `-q` prints no index). Nesting is by indentation, four spaces a level. Never
 * throws: text before any GPU line is passed over, and what it cannot read is said once.
 */
export function parseNvidiaSmiQuery(text: string): NvidiaSmiQueryParse {
  const notes = new UnreadNotes();
  const scrapes: Block[][] = [];
  let current: Block[] = [];
  let block: Block | undefined;
  const path: string[] = [];
  let number = 0;
  for (const raw of text.split('\n', MAX_CSV_LINES)) {
    number += 1;
    const line = raw.replace(/\r$/, '').trimEnd();
    if (line.trim() === '') continue;
    if (/^=+NVSMI LOG=+$/.test(line.trim())) {
      if (current.length > 0) scrapes.push(current);
      current = [];
      block = undefined;
      continue;
    }
    const gpu = /^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$/.exec(line);
    if (gpu) {
      block = { bus: gpu[1] ?? '', line: number, values: new Map() };
      if (current.length < MAX_GPUS_PER_SAMPLE) current.push(block);
      else notes.note(`GPUs past ${MAX_GPUS_PER_SAMPLE} in one log`, number);
      path.length = 0;
      continue;
    }
    const indent = line.length - line.trimStart().length;
    if (!block || indent < 4) continue; // the log's header (Timestamp, Driver Version, …) or a shell prompt
    const depth = Math.floor(indent / 4) - 1;
    const colon = line.indexOf(' : ');
    const label = (colon < 0 ? line : line.slice(0, colon)).trim();
    path.length = Math.min(path.length, depth);
    while (path.length < depth) path.push('?');
    path.push(label);
    if (colon >= 0 && block.values.size < 2_000) block.values.set(path.join('/'), line.slice(colon + 3).trim());
  }
  if (current.length > 0) scrapes.push(current);
  const samples = scrapes.map((blocks) => blocks.map((b, index) => gpuOf(b, index, notes)));
  return { samples, unread: notes.list() };
}

function gpuOf(block: Block, index: number, notes: UnreadNotes): GpuMetrics {
  const { values } = block;
  const gpu = emptyMetrics(index);
  gpu.pci_bus = canonicalPciBus(values.get('PCI/Bus Id') ?? block.bus);
  const uuid = values.get('GPU UUID');
  gpu.uuid = uuid === undefined || isUnavailable(uuid) ? null : uuid;
  const name = values.get('Product Name');
  gpu.name = name === undefined || isUnavailable(name) ? null : name;
  for (const [metric, labels] of NUMERIC_LABELS) {
    const label = labels.find((l) => values.has(l));
    if (label === undefined) continue;
    const value = values.get(label);
    if (value !== undefined && numeric(value) === null) notes.note(`${label}: ${value}`, block.line);
    gpu[metric] = plausible(metric, numeric(value));
  }
  for (const [metric, parts, old] of ECC) {
    const found = parts.map((p) => numeric(values.get(p)));
    gpu[metric] = plausible(metric, found.every((v) => v !== null) ? found.reduce((a, b) => (a ?? 0) + (b ?? 0), 0) : numeric(values.get(old)));
  }
  gpu.remap_pending = yesNo(values.get('Remapped Rows/Pending'));
  gpu.remap_failure = yesNo(values.get('Remapped Rows/Remapping Failure Occurred'));
  gpu.throttle = throttleOf(values);
  const processes = values.get('Processes');
  if (processes === 'None') gpu.processes = 0;
  else {
    const ids = [...values.keys()].filter((k) => /^Processes\/.*Process ID$/.test(k)).length;
    if (ids > 0) gpu.processes = ids;
  }
  if (values.get('MIG Mode/Current') === 'Enabled') notes.note('MIG enabled: read as the whole GPU (per-instance metrics not read)', block.line);
  return gpu;
}

function yesNo(value: string | undefined): boolean | null {
  return value === 'Yes' ? true : value === 'No' ? false : null;
}

function throttleOf(values: ReadonlyMap<string, string>): ThrottleReason[] | null {
  const active = new Set<ThrottleReason>();
  let seen = false;
  for (const [key, value] of values) {
    const match = /^Clocks (?:Event|Throttle) Reasons\/(?:.*\/)?([^/]+)$/.exec(key);
    const reason = match?.[1] === undefined ? undefined : REASON_LABELS.get(match[1]);
    if (reason === undefined || isUnavailable(value)) continue;
    seen = true;
    if (value === 'Active') active.add(reason);
  }
  return seen ? THROTTLE_REASONS.filter((r) => active.has(r)) : null;
}
