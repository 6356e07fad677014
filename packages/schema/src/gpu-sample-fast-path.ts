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

const METRICS = Object.entries(GPU_METRIC_KINDS);
/** Every field but the optional `job`, which a GPU running nothing known does not carry. */
const METRIC_COUNT = METRICS.length - 1;
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

function canonicalGpu(gpu: unknown): boolean {
  if (typeof gpu !== 'object' || gpu === null || Array.isArray(gpu)) return false;
  const g = gpu as Record<string, unknown>;
  const hasJob = Object.hasOwn(g, 'job');
  if (Object.keys(g).length !== (hasJob ? METRIC_COUNT + 1 : METRIC_COUNT)) return false;
  for (const [name, kind] of METRICS) {
    const v = g[name];
    switch (kind) {
      case 'index':
        if (!isGpuIndex(v)) return false;
        break;
      case 'gauge':
        if (!(v === null || (typeof v === 'number' && Number.isFinite(v)))) return false;
        break;
      case 'count':
        if (!(v === null || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0))) return false;
        break;
      case 'flag':
        if (!(v === null || typeof v === 'boolean')) return false;
        break;
      case 'id':
        if (!(v === null || (typeof v === 'string' && v.length > 0))) return false;
        break;
      case 'text':
        if (!(v === null || typeof v === 'string')) return false;
        break;
      case 'pci':
        if (!(v === null || (typeof v === 'string' && PCI_BUS_PATTERN.test(v)))) return false;
        break;
      case 'throttle':
        if (v === null) break;
        if (!Array.isArray(v) || !v.every((r) => typeof r === 'string' && THROTTLE.has(r))) return false;
        break;
      case 'job':
        if (hasJob && !canonicalJob(v)) return false;
        break;
      default:
        return false; // a field of another name: not canonical
    }
  }
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
