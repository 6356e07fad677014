import { z } from 'zod';
import { FORBIDDEN_LABEL_NAME, isGpuIndex, isHostName, MAX_GPUS_PER_SAMPLE, MAX_LABEL_NAME_LENGTH, MAX_LABEL_VALUE_LENGTH, MAX_LABELS } from './bounds.ts';
import type { EnvelopeOf } from './envelope.ts';
import { isJobText, JOB_ATTRIBUTION_KEYS } from './job-attribution.ts';
import { THROTTLE_REASONS } from './metrics.ts';
import { PCI_BUS_PATTERN } from './pci-bus.ts';

/** How each GPU metric is typed; the schema's test checks this table names every field of `GpuMetrics`. */
export const GPU_METRIC_KINDS = {
  index: 'index',
  uuid: 'id',
  pci_bus: 'pci',
  name: 'text',
  util_pct: 'gauge',
  mem_util_pct: 'gauge',
  mem_used_mib: 'gauge',
  mem_total_mib: 'gauge',
  temp_c: 'gauge',
  mem_temp_c: 'gauge',
  power_w: 'gauge',
  power_limit_w: 'gauge',
  sm_clock_mhz: 'gauge',
  mem_clock_mhz: 'gauge',
  fan_pct: 'gauge',
  pcie_gen: 'count',
  pcie_gen_max: 'count',
  pcie_width: 'count',
  pcie_width_max: 'count',
  ecc_sbe_volatile: 'count',
  ecc_dbe_volatile: 'count',
  ecc_sbe_aggregate: 'count',
  ecc_dbe_aggregate: 'count',
  remap_pending: 'flag',
  remap_failure: 'flag',
  throttle: 'throttle',
  xid_last: 'count',
  nvlink_errors: 'count',
  processes: 'count',
  job: 'job',
} as const;

/** Every field but the optional `job`, which a GPU running nothing known does not carry. */
const METRIC_COUNT = Object.keys(GPU_METRIC_KINDS).length - 1;
const JOB_KEYS = new Set<string>(JOB_ATTRIBUTION_KEYS);
const THROTTLE = new Set<string>(THROTTLE_REASONS);
const ENVELOPE_KEYS = 7; // id, ts, host, labels, source, type, data
const timestamp = z.iso.datetime({ offset: true });

/**
 * The hot path's check: a `gpu.sample` exactly as collectors write it (every field present, no
 * others, no collector error) is recognised here in a fraction of the full schema's time, and is
 * then exactly what the schema would return. Anything else answers false and takes the full
 * schema, which also words the error. A property test holds the two to "true here ⇒ valid there,
 * with the same value"; it applies the same bounds (bounds.ts). The caller makes `labels` inert
 * (inert-record.ts), as the schema does.
 */
export function isCanonicalGpuSample(json: unknown): json is EnvelopeOf<'gpu.sample'> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false;
  const e = json as Record<string, unknown>;
  if (e.type !== 'gpu.sample' || Object.keys(e).length !== ENVELOPE_KEYS) return false;
  if (!text(e.id, 128) || !isHostName(e.host) || !text(e.source, Infinity)) return false;
  if (typeof e.ts !== 'string' || !timestamp.safeParse(e.ts).success) return false;
  if (!stringRecord(e.labels)) return false;
  const data = e.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return false;
  const gpus = (data as Record<string, unknown>).gpus;
  if (Object.keys(data).length !== 1 || !Array.isArray(gpus) || gpus.length > MAX_GPUS_PER_SAMPLE) return false;
  for (const gpu of gpus) if (!canonicalGpu(gpu)) return false;
  return uniqueIndexes(gpus as readonly { index: number }[]);
}

const gauge = (v: unknown): boolean => v === null || (typeof v === 'number' && Number.isFinite(v));
const count = (v: unknown): boolean => v === null || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0);
const flag = (v: unknown): boolean => v === null || typeof v === 'boolean';

/**
 * Each field of the table read by its own name: read by names from a list, every read was a
 * generic lookup (10 µs a message of 8 GPUs, against 2 µs so). Undefined fails every check, so
 * each field must be present, and the count of keys leaves no room for another. The test holds
 * this to the table, field by field.
 */
function canonicalGpu(gpu: unknown): boolean {
  if (typeof gpu !== 'object' || gpu === null || Array.isArray(gpu)) return false;
  const g = gpu as Partial<Record<keyof typeof GPU_METRIC_KINDS, unknown>>;
  const hasJob = Object.hasOwn(g, 'job');
  if (Object.keys(g).length !== (hasJob ? METRIC_COUNT + 1 : METRIC_COUNT)) return false;
  return (
    isGpuIndex(g.index) &&
    (g.uuid === null || (typeof g.uuid === 'string' && g.uuid.length > 0)) &&
    (g.pci_bus === null || (typeof g.pci_bus === 'string' && PCI_BUS_PATTERN.test(g.pci_bus))) &&
    (g.name === null || typeof g.name === 'string') &&
    gauge(g.util_pct) &&
    gauge(g.mem_util_pct) &&
    gauge(g.mem_used_mib) &&
    gauge(g.mem_total_mib) &&
    gauge(g.temp_c) &&
    gauge(g.mem_temp_c) &&
    gauge(g.power_w) &&
    gauge(g.power_limit_w) &&
    gauge(g.sm_clock_mhz) &&
    gauge(g.mem_clock_mhz) &&
    gauge(g.fan_pct) &&
    count(g.pcie_gen) &&
    count(g.pcie_gen_max) &&
    count(g.pcie_width) &&
    count(g.pcie_width_max) &&
    count(g.ecc_sbe_volatile) &&
    count(g.ecc_dbe_volatile) &&
    count(g.ecc_sbe_aggregate) &&
    count(g.ecc_dbe_aggregate) &&
    flag(g.remap_pending) &&
    flag(g.remap_failure) &&
    (g.throttle === null || throttleReasons(g.throttle)) &&
    count(g.xid_last) &&
    count(g.nvlink_errors) &&
    count(g.processes) &&
    (!hasJob || canonicalJob(g.job))
  );
}

function throttleReasons(v: unknown): boolean {
  if (!Array.isArray(v)) return false;
  for (const reason of v) if (typeof reason !== 'string' || !THROTTLE.has(reason)) return false;
  return true;
}

/** A job attribution of known keys only, each a bounded single-line text (job-attribution.ts). */
function canonicalJob(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  for (const key of Object.keys(v)) if (!JOB_KEYS.has(key) || !isJobText((v as Record<string, unknown>)[key])) return false;
  return true;
}

/** Each GPU once; a machine's handful compared pairwise, with no allocation on the hot path. */
function uniqueIndexes(gpus: readonly { index: number }[]): boolean {
  if (gpus.length > 16) return new Set(gpus.map((g) => g.index)).size === gpus.length;
  let i = 0;
  for (const gpu of gpus) {
    for (let j = 0; j < i; j += 1) if (gpus[j]?.index === gpu.index) return false;
    i += 1;
  }
  return true;
}

function text(v: unknown, max: number): boolean {
  return typeof v === 'string' && v.length >= 1 && v.length <= max;
}

function stringRecord(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  if (keys.length > MAX_LABELS) return false;
  for (const key of keys) {
    const value = (v as Record<string, unknown>)[key];
    if (key === FORBIDDEN_LABEL_NAME || !text(key, MAX_LABEL_NAME_LENGTH) || typeof value !== 'string' || value.length > MAX_LABEL_VALUE_LENGTH) return false;
  }
  return true;
}
