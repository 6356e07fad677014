import { z } from 'zod';
import {
  AlertData, GpuSampleData, HostInventoryData, KernelEventData, KernelLineData, NotificationData,
  ProviderEventData, ProviderRawData,
} from './data.ts';

/** The data schema of every envelope type. */
export const DATA_SCHEMAS = {
  'gpu.sample': GpuSampleData,
  'kernel.line': KernelLineData,
  'kernel.event': KernelEventData,
  'provider.raw': ProviderRawData,
  'provider.event': ProviderEventData,
  'host.inventory': HostInventoryData,
  alert: AlertData,
  notification: NotificationData,
} as const;

export type EnvelopeType = keyof typeof DATA_SCHEMAS;
export const ENVELOPE_TYPES = Object.keys(DATA_SCHEMAS) as EnvelopeType[];

const common = {
  id: z.string().min(1).max(128),
  ts: z.iso.datetime({ offset: true }),
  host: z.string().min(1).max(255),
  labels: z.record(z.string(), z.string()),
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
  variant('alert'),
  variant('notification'),
]);
export type Envelope = z.infer<typeof Envelope>;

/** The envelope of one type, e.g. `EnvelopeOf<'alert'>`. */
export type EnvelopeOf<T extends EnvelopeType> = Extract<Envelope, { type: T }>;
