import { canonicalPciBus, MAX_GPUS_PER_SAMPLE, THROTTLE_REASONS, type GpuMetrics, type ThrottleReason } from '@gpualert/schema';
import { XMLParser } from 'fast-xml-parser';
import { emptyMetrics, UnreadNotes, type Unread } from './nvidia-smi-csv.ts';
import type { NumericMetric } from './nvidia-smi-fields.ts';
import { plausible } from './physical-range.ts';
import { isUnavailable } from './unavailable.ts';

/** The largest `nvidia-smi -q -x` document read: 8 GPUs print ~60 KB each with every supported clock. */
export const MAX_XML_BYTES = 16 * 1024 * 1024;

export interface NvidiaSmiXmlParse {
  /** The GPUs of the one scrape the document is, in its order. */
  readonly gpus: GpuMetrics[];
  /** Why nothing could be read, when nothing could. */
  readonly error?: string;
  /** What the document holds that could not be read, each said once. */
  readonly unread: readonly Unread[];
}

type Node = Record<string, unknown>;

/** A child element, never an inherited property (element names are the input's words). */
function child(node: unknown, name: string): unknown {
  return typeof node === 'object' && node !== null && Object.hasOwn(node, name) ? (node as Node)[name] : undefined;
}

function at(node: unknown, path: string): unknown {
  let current = node;
  for (const name of path.split('/')) current = child(current, name);
  return current;
}

/** An element's text ("27 C", "N/A", "Not Active"), or undefined when it is absent or not text. */
function text(node: unknown, path: string): string | undefined {
  const value = at(node, path);
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

/**
 * Where each metric is in `nvidia-smi -q -x`, per nvsmi_device_v10…v13.dtd; alternatives newest
 * first (`gpu_power_readings` since v12, `power_readings` before; `instant_power_draw` since 550).
 */
const NUMERIC_PATHS: readonly (readonly [NumericMetric, readonly string[]])[] = [
  ['util_pct', ['utilization/gpu_util']],
  ['mem_util_pct', ['utilization/memory_util']],
  ['mem_used_mib', ['fb_memory_usage/used']],
  ['mem_total_mib', ['fb_memory_usage/total']],
  ['temp_c', ['temperature/gpu_temp']],
  ['mem_temp_c', ['temperature/memory_temp']],
  ['power_w', ['gpu_power_readings/instant_power_draw', 'gpu_power_readings/power_draw', 'power_readings/instant_power_draw', 'power_readings/power_draw']],
  ['power_limit_w', ['gpu_power_readings/current_power_limit', 'power_readings/power_limit', 'power_readings/enforced_power_limit']],
  ['sm_clock_mhz', ['clocks/sm_clock']],
  ['mem_clock_mhz', ['clocks/mem_clock']],
  ['fan_pct', ['fan_speed']],
  ['pcie_gen', ['pci/pci_gpu_link_info/pcie_gen/current_link_gen']],
  ['pcie_gen_max', ['pci/pci_gpu_link_info/pcie_gen/max_link_gen']],
  ['pcie_width', ['pci/pci_gpu_link_info/link_widths/current_link_width']],
  ['pcie_width_max', ['pci/pci_gpu_link_info/link_widths/max_link_width']],
];

/** ECC counts: SRAM and DRAM since v11 (their sum is the chip's total, as `ecc.errors.*.total` is), single/double bit before. */
const ECC: readonly (readonly [NumericMetric, string, readonly string[]])[] = [
  ['ecc_sbe_volatile', 'ecc_errors/volatile', ['sram_correctable', 'dram_correctable']],
  ['ecc_dbe_volatile', 'ecc_errors/volatile', ['sram_uncorrectable', 'dram_uncorrectable']],
  ['ecc_sbe_aggregate', 'ecc_errors/aggregate', ['sram_correctable', 'dram_correctable']],
  ['ecc_dbe_aggregate', 'ecc_errors/aggregate', ['sram_uncorrectable', 'dram_uncorrectable']],
];
const ECC_OLD: ReadonlyMap<NumericMetric, string> = new Map<NumericMetric, string>([
  ['ecc_sbe_volatile', 'ecc_errors/volatile/single_bit/total'],
  ['ecc_dbe_volatile', 'ecc_errors/volatile/double_bit/total'],
  ['ecc_sbe_aggregate', 'ecc_errors/aggregate/single_bit/total'],
  ['ecc_dbe_aggregate', 'ecc_errors/aggregate/double_bit/total'],
]);

function numeric(value: string | undefined): number | null {
  if (value === undefined || isUnavailable(value)) return null;
  const number = Number.parseFloat(value); // "27 C", "16x", "67.03 W"
  return Number.isFinite(number) ? number : null;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  // Values stay text ("00" is a bus, not 0); no entity is expanded (a DOCTYPE's entities never grow the input).
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: false,
  trimValues: true,
  isArray: (name) => name === 'gpu' || name === 'process_info' || name === 'mig_device',
});

/**
 * Reads `nvidia-smi -q -x` (the `nvidia_smi_log` document): one GPU per `<gpu>`, known by its
 * bus id (the element's `id`) and UUID, numbered by its place (nvidia-smi lists GPUs in index
 * order; the document carries no index, and `minor_number` is not one). Never throws: a document
 * that is not one is `error`; what it cannot read is said once in `unread`.
 */
export function parseNvidiaSmiXml(xml: string): NvidiaSmiXmlParse {
  const notes = new UnreadNotes();
  if (xml.length > MAX_XML_BYTES) return { gpus: [], error: `larger than the ${MAX_XML_BYTES} bytes one document may be`, unread: [] };
  let document: unknown;
  try {
    document = parser.parse(xml, true);
  } catch (error) {
    return { gpus: [], error: `not XML: ${(error instanceof Error ? error.message : String(error)).slice(0, 200)}`, unread: [] };
  }
  const log = child(document, 'nvidia_smi_log');
  if (log === undefined) return { gpus: [], error: 'no <nvidia_smi_log> element: not the output of nvidia-smi -q -x', unread: [] };
  const elements = child(log, 'gpu');
  const list = Array.isArray(elements) ? (elements as unknown[]) : [];
  const attached = numeric(text(log, 'attached_gpus'));
  if (attached !== null && attached !== list.length)
    notes.note(`attached_gpus says ${attached}, the document has ${list.length} <gpu> (nvidia-smi -i chose some, or a GPU could not be read)`, 0);
  if (list.length > MAX_GPUS_PER_SAMPLE) notes.note(`<gpu> past the first ${MAX_GPUS_PER_SAMPLE}`, 0);
  const gpus = list.slice(0, MAX_GPUS_PER_SAMPLE).map((element, index) => gpuOf(element, index, notes));
  return { gpus, unread: notes.list() };
}

function gpuOf(element: unknown, index: number, notes: UnreadNotes): GpuMetrics {
  const gpu = emptyMetrics(index);
  const id = text(element, '@_id');
  gpu.pci_bus = id === undefined ? null : canonicalPciBus(id);
  const uuid = text(element, 'uuid');
  gpu.uuid = uuid === undefined || isUnavailable(uuid) ? null : uuid;
  const name = text(element, 'product_name');
  gpu.name = name === undefined || isUnavailable(name) ? null : name;
  for (const [metric, paths] of NUMERIC_PATHS) {
    const path = paths.find((p) => text(element, p) !== undefined);
    if (path === undefined) continue;
    const value = text(element, path);
    if (value !== undefined && isUnavailable(value)) notes.note(`${path}: ${value}`, 0);
    gpu[metric] = plausible(metric, numeric(value));
  }
  for (const [metric, base, parts] of ECC) {
    const values = parts.map((p) => numeric(text(element, `${base}/${p}`)));
    const old = numeric(text(element, ECC_OLD.get(metric) ?? ''));
    gpu[metric] = plausible(metric, values.every((v) => v !== null) ? values.reduce((a, b) => (a ?? 0) + (b ?? 0), 0) : old);
  }
  const remapped = at(element, 'remapped_rows');
  if (typeof remapped === 'object' && remapped !== null) {
    gpu.remap_pending = yesNo(text(remapped, 'remapped_row_pending'));
    gpu.remap_failure = yesNo(text(remapped, 'remapped_row_failure'));
  } else if (typeof remapped === 'string') notes.note(`remapped_rows: ${remapped}`, 0);
  gpu.throttle = throttleOf(element);
  const processes = at(element, 'processes/process_info');
  if (Array.isArray(processes)) gpu.processes = processes.length;
  else if (at(element, 'processes') !== undefined) gpu.processes = 0;
  if (text(element, 'mig_mode/current_mig') === 'Enabled') {
    const devices = at(element, 'mig_devices/mig_device');
    notes.note(`MIG enabled: ${Array.isArray(devices) ? devices.length : 0} MIG devices, read as their GPU (per-instance metrics not read)`, 0);
  }
  return gpu;
}

function yesNo(value: string | undefined): boolean | null {
  return value === 'Yes' ? true : value === 'No' ? false : null;
}

/** `clocks_event_reasons` (v12+) or `clocks_throttle_reasons`: each reason "Active" or "Not Active". */
function throttleOf(element: unknown): ThrottleReason[] | null {
  for (const [group, prefix] of [
    ['clocks_event_reasons', 'clocks_event_reason_'],
    ['clocks_throttle_reasons', 'clocks_throttle_reason_'],
  ] as const) {
    const reasons = at(element, group);
    if (typeof reasons !== 'object' || reasons === null) continue;
    let seen = false;
    const active: ThrottleReason[] = [];
    for (const reason of THROTTLE_REASONS) {
      // The XML says display_clocks_setting where the CSV and NVML say display_clock_setting.
      const value = text(reasons, `${prefix}${reason}`) ?? (reason === 'display_clock_setting' ? text(reasons, `${prefix}display_clocks_setting`) : undefined);
      if (value === undefined || isUnavailable(value)) continue;
      seen = true;
      if (value === 'Active') active.push(reason);
    }
    return seen ? active : null;
  }
  return null;
}
