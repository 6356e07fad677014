import { z } from 'zod';
import { FORBIDDEN_LABEL_NAME, MAX_LABEL_NAME_LENGTH, MAX_LABEL_VALUE_LENGTH, MAX_LABELS } from './bounds.ts';
import { toInertRecord } from './inert-record.ts';
import {
  AlertData,
  GpuSampleData,
  HostName,
  HostInventoryData,
  KernelEventData,
  KernelLineData,
  NotificationData,
  ProviderEventData,
  ProviderRawData,
} from './data.ts';
import { BmcEventData, HostSampleData } from './host-sample.ts';
import { JobEventData } from './job-event.ts';
import { TelemetryHealthData } from './telemetry-health.ts';
import { UsageRollupData } from './usage.ts';
import { AcknowledgementData } from './acknowledgement.ts';
import { ActionApprovalData, ActionData, ActionResultData } from './remediation.ts';

/** The data schema of every envelope type. */
export const DATA_SCHEMAS = {
  'gpu.sample': GpuSampleData,
  'kernel.line': KernelLineData,
  'kernel.event': KernelEventData,
  'provider.raw': ProviderRawData,
  'provider.event': ProviderEventData,
  'host.inventory': HostInventoryData,
  'host.sample': HostSampleData,
  'bmc.event': BmcEventData,
  'telemetry.health': TelemetryHealthData,
  alert: AlertData,
  notification: NotificationData,
  acknowledgement: AcknowledgementData,
  'job.event': JobEventData,
  'usage.rollup': UsageRollupData,
  action: ActionData,
  'action.approval': ActionApprovalData,
  'action.result': ActionResultData,
} as const;

export type EnvelopeType = keyof typeof DATA_SCHEMAS;
export const ENVELOPE_TYPES = Object.keys(DATA_SCHEMAS) as EnvelopeType[];

/**
 * Labels: bounded in number and length, and parsed into an object with no prototype, so a label
 * named or valued `constructor` is only data. zod's record skips a `__proto__` key silently: it is
 * refused here first, by name, rather than dropped.
 */
export const Labels = z
  .unknown()
  .check((ctx) => {
    const v = ctx.value;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return; // the record below words it
    const count = Object.keys(v).length;
    if (count > MAX_LABELS) {
      ctx.issues.push({ code: 'custom', message: `at most ${MAX_LABELS} labels`, input: `${count} labels`, continue: false });
    } else if (Object.hasOwn(v, FORBIDDEN_LABEL_NAME)) {
      ctx.issues.push({ code: 'custom', message: `a label name other than ${FORBIDDEN_LABEL_NAME}`, input: v, path: [FORBIDDEN_LABEL_NAME], continue: false });
    }
  })
  .pipe(z.record(z.string().min(1).max(MAX_LABEL_NAME_LENGTH), z.string().max(MAX_LABEL_VALUE_LENGTH)))
  .transform((labels) => toInertRecord(labels));

const common = {
  id: z.string().min(1).max(128),
  ts: z.iso.datetime({ offset: true }),
  host: HostName,
  labels: Labels,
  source: z.string().min(1),
};

function variant<T extends EnvelopeType>(type: T) {
  return z.object({ ...common, type: z.literal(type), data: DATA_SCHEMAS[type] });
}

export const Envelope = z.discriminatedUnion('type', [
  variant('gpu.sample'),
  variant('kernel.line'),
  variant('kernel.event'),
  variant('provider.raw'),
  variant('provider.event'),
  variant('host.inventory'),
  variant('host.sample'),
  variant('bmc.event'),
  variant('telemetry.health'),
  variant('alert'),
  variant('notification'),
  variant('acknowledgement'),
  variant('job.event'),
  variant('usage.rollup'),
  variant('action'),
  variant('action.approval'),
  variant('action.result'),
]);
export type Envelope = z.infer<typeof Envelope>;

/** The envelope of one type, e.g. `EnvelopeOf<'alert'>`. */
export type EnvelopeOf<T extends EnvelopeType> = Extract<Envelope, { type: T }>;
