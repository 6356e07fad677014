import { z } from 'zod';
import {
  CONTROL_CHARACTERS,
  FORBIDDEN_LABEL_NAME,
  MAX_GPUS_PER_SAMPLE,
  MAX_HOST_LENGTH,
  MAX_HOSTS_PER_PROVIDER_EVENT,
  MAX_LABEL_NAME_LENGTH,
  MAX_LABELS,
} from './bounds.ts';
import { toInertRecord } from './inert-record.ts';
import { GpuIndex, GpuMetrics } from './metrics.ts';
import { PciBus } from './pci-bus.ts';
import { Severity } from './severity.ts';
import { PciAddress, PciTopologyData } from './inventory-pci.ts';

export * from './inventory-pci.ts';

/** The `data` of each envelope type (DESIGN.md, "The envelope"). */

const isoTime = z.iso.datetime({ offset: false });

/** A host's name, wherever one appears (an envelope's `host`, a provider event's `hosts`). */
export const HostName = z
  .string()
  .min(1)
  .max(MAX_HOST_LENGTH)
  .refine((v) => !CONTROL_CHARACTERS.test(v), 'expected a host name without control characters');

/** Why a scrape failed; often the first sign of a lost GPU. */
export const CollectorError = z.object({
  code: z.enum(['gpu_lost', 'command_failed', 'timeout', 'unreachable', 'unparseable']),
  message: z.string(),
  pci_bus: PciBus.optional(),
  exit_code: z.number().int().optional(),
});
export type CollectorError = z.infer<typeof CollectorError>;

/** One scrape of one host; `error` is set when the scrape failed (then `gpus` may be partial or empty). */
export const GpuSampleData = z.object({
  // Each GPU once: a sample is one scrape of one machine, and the engine keys its GPUs by index.
  gpus: z
    .array(GpuMetrics)
    .max(MAX_GPUS_PER_SAMPLE)
    .check((ctx) => {
      const seen = new Set<number>();
      ctx.value.forEach((gpu, i) => {
        if (seen.has(gpu.index)) ctx.issues.push({ code: 'custom', message: 'an index not already in this sample', input: gpu.index, path: [i, 'index'] });
        seen.add(gpu.index);
      });
    }),
  error: CollectorError.optional(),
});
export type GpuSampleData = z.infer<typeof GpuSampleData>;

export const KernelLineData = z.object({ line: z.string() });
export type KernelLineData = z.infer<typeof KernelLineData>;

export const KERNEL_EVENT_KINDS = [
  'xid',
  'sxid',
  'nvlink',
  'pcie_aer',
  'fallen_off_bus',
  'ecc',
  'row_remap',
  'oom_kill',
  'thermal',
  'gsp',
  'other_gpu',
  // The host's own health (machine checks, soft lockups, hung tasks, panics): a GPU job dies of
  // these too, and nothing else in the list can say so. Added to the design's list.
  'host',
] as const;
export const KernelEventKind = z.enum(KERNEL_EVENT_KINDS);
export type KernelEventKind = z.infer<typeof KernelEventKind>;

/** What kind of host fault a `host` kernel event is. */
export const HOST_FAULTS = [
  // memory errors (EDAC, machine checks with a memory error, hwpoison), other machine checks (mce, APEI/GHES)
  'memory_ue',
  'memory_ce',
  'mce',
  // kernel crashes: an oops (bad pointer), a BUG, a general protection fault, a panic
  'oops',
  'bug',
  'gpf',
  'panic',
  // stalls: hung tasks, soft lockups, the NMI watchdog's hard lockups, RCU stalls, unexplained NMIs
  'hung_task',
  'soft_lockup',
  'nmi_watchdog',
  'rcu_stall',
  'nmi',
  // a PCIe slot short of power
  'power',
] as const;
export const HostFault = z.enum(HOST_FAULTS);
export type HostFault = z.infer<typeof HostFault>;

/** A PCIe switch or root port's own error, with the GPUs and NVSwitches below it where the topology is known. */
export const KernelEventPort = z.object({
  address: PciAddress,
  gpus: z.array(PciBus).max(256).optional(),
  gpu_indexes: z.array(GpuIndex).max(256).optional(),
  nvswitches: z.array(PciBus).max(64).optional(),
});
export type KernelEventPort = z.infer<typeof KernelEventPort>;

export const KernelEventData = z.object({
  kind: KernelEventKind,
  pci_bus: PciBus.optional(),
  gpu: GpuIndex.optional(),
  xid: z.number().int().nonnegative().optional(),
  /** The MIG instance the Xid names (` GPU-I:nn GPU-CI:nn` inside the parentheses). */
  mig: z.object({ gpu_instance: z.number().int().nonnegative(), compute_instance: z.number().int().nonnegative().optional() }).optional(),
  pid: z.number().int().nonnegative().optional(),
  process: z.string().optional(),
  message: z.string(),
  severity: Severity,
  meaning: z.string().optional(),
  action: z.string().optional(),
  /** How many identical lines a burst collapsed into this event. */
  count: z.number().int().positive().optional(),
  /** Continuation lines (GSP RPC tables, stack traces) attached to the event. */
  details: z.array(z.string()).optional(),
  /** With kind `host`: which fault. */
  host_fault: HostFault.optional(),
  /** With kind `pcie_aer`: the error is the port's (a switch or root port above GPUs), not a GPU's own. */
  port: KernelEventPort.optional(),
  /**
   * A flood of one fault (the same GPU or port and code) is one episode: each of its events after
   * the first carries the episode's first and last line times and its lines so far (`count` is this event's).
   */
  episode: z.object({ first_ts: isoTime, last_ts: isoTime, lines: z.number().int().positive() }).optional(),
});
export type KernelEventData = z.infer<typeof KernelEventData>;

export const PROVIDERS = ['aws', 'aws-imds', 'gcp', 'azure', 'oci', 'generic'] as const;
export const Provider = z.enum(PROVIDERS);
export type Provider = z.infer<typeof Provider>;

export const ProviderRawData = z.object({ provider: Provider, payload: z.unknown() });
export type ProviderRawData = z.infer<typeof ProviderRawData>;

export const PROVIDER_EVENT_KINDS = ['maintenance', 'reboot', 'retirement', 'stop', 'terminate', 'preemption', 'migration', 'rebalance'] as const;
export const PROVIDER_EVENT_STATUSES = ['scheduled', 'started', 'completed', 'cancelled'] as const;

export const ProviderEventData = z.object({
  provider: Provider,
  event_id: z.string().min(1),
  kind: z.enum(PROVIDER_EVENT_KINDS),
  status: z.enum(PROVIDER_EVENT_STATUSES),
  hosts: z.array(HostName).max(MAX_HOSTS_PER_PROVIDER_EVENT),
  window_start: isoTime.optional(),
  window_end: isoTime.optional(),
  description: z.string(),
  raw_id: z.string(),
});
export type ProviderEventData = z.infer<typeof ProviderEventData>;

export const InventoryGpu = z.object({
  index: GpuIndex,
  uuid: z.string().min(1),
  pci_bus: PciBus,
  name: z.string(),
  serial: z.string().optional(),
});
export type InventoryGpu = z.infer<typeof InventoryGpu>;

export const HostInventoryData = z.object({
  gpu_model: z.string(),
  gpu_count: z.number().int().nonnegative(),
  driver_version: z.string(),
  cuda_version: z.string(),
  vbios: z.string().optional(),
  kernel: z.string().optional(),
  provider: z.string().optional(),
  instance_id: z.string().optional(),
  instance_type: z.string().optional(),
  gpus: z.array(InventoryGpu),
  /** The host's PCI tree (sysfs, or `lspci -tvnn`), so a port's error names the GPUs below it. */
  pci_topology: PciTopologyData.optional(),
});
export type HostInventoryData = z.infer<typeof HostInventoryData>;

export const ALERT_CATEGORIES = [
  'xid',
  'ecc',
  'row_remap',
  'thermal',
  'power',
  'clocks',
  'pcie',
  'nvlink',
  'fallen_off_bus',
  'stuck_job',
  'idle_cost',
  'host_down',
  'collector',
  'maintenance',
  'drift',
  'straggler',
  'baseline',
  'kernel',
  'pipeline',
  'other',
] as const;
export const AlertCategory = z.enum(ALERT_CATEGORIES);
export type AlertCategory = z.infer<typeof AlertCategory>;

/**
 * An annotation's value: Prometheus' `description` often quotes a query's result or a runbook
 * paragraph, longer than a label's 1 KiB; 4 KiB bounds what each alert copies (64 of them: 256 KiB).
 */
export const MAX_ANNOTATION_VALUE_LENGTH = 4_096;

/** Annotations an alert carries (Prometheus' summary, description, runbook_url, dashboard…): bounded as labels are, inert. */
export const Annotations = z
  .unknown()
  .check((ctx) => {
    const v = ctx.value;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return; // the record below words it
    const count = Object.keys(v).length;
    if (count > MAX_LABELS) ctx.issues.push({ code: 'custom', message: `at most ${MAX_LABELS} annotations`, input: `${count} annotations`, continue: false });
    else if (Object.hasOwn(v, FORBIDDEN_LABEL_NAME))
      ctx.issues.push({
        code: 'custom',
        message: `an annotation name other than ${FORBIDDEN_LABEL_NAME}`,
        input: v,
        path: [FORBIDDEN_LABEL_NAME],
        continue: false,
      });
  })
  .pipe(z.record(z.string().min(1).max(MAX_LABEL_NAME_LENGTH), z.string().max(MAX_ANNOTATION_VALUE_LENGTH)))
  .transform((a) => toInertRecord(a));

export const AlertData = z.object({
  fingerprint: z.string().min(1),
  status: z.enum(['firing', 'resolved']),
  severity: Severity,
  category: AlertCategory,
  rule: z.string().min(1),
  gpu: z.object({ index: GpuIndex, uuid: z.string().optional(), pci_bus: PciBus.optional() }).optional(),
  summary: z.string(),
  description: z.string().optional(),
  action: z.string().optional(),
  starts_at: isoTime,
  ends_at: isoTime.optional(),
  expected: z.boolean().optional(),
  evidence: z.array(z.string()),
  templates: z.array(z.string()).optional(),
  /** The host incident this alert belongs to: the fingerprint of its first alert. */
  incident: z.string().optional(),
  /** What the incident's root cause is where the engine knows it (`cooling`: the host's fans or inlet explain its GPUs' heat). */
  root_cause: z.string().max(64).optional(),
  /** The value that breached, where there is one (°C, W, %, count). */
  value: z.number().optional(),
  /** Every annotation of an alert pushed through Alertmanager's API, as sent (summary and description included). */
  annotations: Annotations.optional(),
  /** A maintenance alert's announced window, as the provider gave it: the notifier's silence holds the pager from its start to its end. */
  window: z.object({ start: isoTime.optional(), end: isoTime.optional() }).optional(),
});
export type AlertData = z.infer<typeof AlertData>;

export const NotificationData = z.object({
  receiver: z.string().min(1),
  channel: z.string().min(1),
  fingerprints: z.array(z.string()),
  reason: z.string(),
  outcome: z.enum(['sent', 'failed', 'suppressed']),
  attempt: z.number().int().nonnegative(),
  error: z.string().optional(),
  /** The message this attempt sent: the same on each of its retries, so the timeline ties them together. */
  notification_id: z.string().max(256).optional(),
  /** With a failed attempt that will be retried: how long until the next one. A failed attempt without it was the last. */
  retry_in_ms: z.number().int().nonnegative().optional(),
});
export type NotificationData = z.infer<typeof NotificationData>;
