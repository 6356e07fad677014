import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { repeat } from '../repeat.ts';
import type { GpuSource } from './gpu-source.ts';

export interface GpuCollectorOptions {
  readonly bus: Bus;
  readonly source: GpuSource;
  readonly host: string;
  readonly labels?: Record<string, string>;
  readonly intervalMs: number;
  readonly log: Logger;
}

export const GPU_COLLECTOR_SOURCE = 'collector-gpu/0.1.0';

/** Scrapes at an interval and publishes one `gpu.sample` per scrape; a failed scrape is published too. */
export function startGpuCollector(options: GpuCollectorOptions): { stop(): Promise<void> } {
  const once = async (): Promise<void> => {
    const started = Date.now();
    const data = await options.source.scrape();
    const envelope = newEnvelope({
      type: 'gpu.sample',
      host: options.host,
      source: GPU_COLLECTOR_SOURCE,
      ts: new Date(started).toISOString(),
      labels: options.labels ?? {},
      data,
    });
    if (data.error) options.log.warn({ error: data.error }, 'gpu_scrape_failed');
    // A value nvidia-smi could not give ([GPU requires reset], [Unknown Error]) is null in the sample; said here once, at the default level.
    for (const note of options.source.takeNotes?.() ?? []) options.log.warn({ source: options.source.name, note }, 'gpu_scrape_unread');
    try {
      await options.bus.publish(TOPICS.gpuSamples, [envelopeMessage(envelope)]);
    } catch (error) {
      options.log.error({ error: String(error) }, 'gpu_sample_publish_failed');
    }
  };
  return repeat(once, (elapsed) => options.intervalMs - elapsed);
}
