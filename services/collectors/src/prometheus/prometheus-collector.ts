import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { repeat } from '../repeat.ts';
import { queryPrometheusGpus, type PrometheusQueryOptions } from './prometheus-query.ts';

export const PROMETHEUS_COLLECTOR_SOURCE = 'collector-prometheus/0.1.0';

export interface PrometheusCollectorOptions {
  readonly bus: Bus;
  readonly query: PrometheusQueryOptions;
  readonly intervalMs: number;
  readonly labels?: Record<string, string>;
  readonly log: Logger;
}

/** How many samples go to the bus in one publish call. */
const PUBLISH_BATCH = 500;

/**
 * One central collector for fleets that already run dcgm-exporter under Prometheus: every interval
 * it asks Prometheus for the fleet's DCGM series and publishes one `gpu.sample` per host, dated
 * when Prometheus evaluated them. When Prometheus cannot answer, nothing is published (the
 * engine sees its input stall, not every host down) and one warning says why.
 */
export function startPrometheusCollector(options: PrometheusCollectorOptions): { stop(): Promise<void> } {
  let failing = false;
  const once = async (): Promise<void> => {
    let answer;
    try {
      answer = await queryPrometheusGpus(options.query);
    } catch (error) {
      options.log.warn(
        {
          error: error instanceof Error ? error.message : String(error),
          kind: typeof error === 'object' && error !== null && 'kind' in error ? error.kind : undefined,
        },
        'prometheus_query_failed',
      );
      failing = true;
      return;
    }
    if (failing) options.log.info({ hosts: answer.hosts.size }, 'prometheus_query_recovered');
    failing = false;
    const ts = answer.evaluatedAt.toISOString();
    const messages = [...answer.hosts].map(([host, gpus]) =>
      envelopeMessage(newEnvelope({ type: 'gpu.sample', host, source: PROMETHEUS_COLLECTOR_SOURCE, ts, labels: options.labels ?? {}, data: { gpus } })),
    );
    try {
      for (let i = 0; i < messages.length; i += PUBLISH_BATCH) await options.bus.publish(TOPICS.gpuSamples, messages.slice(i, i + PUBLISH_BATCH));
    } catch (error) {
      options.log.error({ error: String(error) }, 'gpu_sample_publish_failed');
    }
    options.log.debug({ hosts: answer.hosts.size, skipped: answer.skipped }, 'prometheus_samples_published');
  };
  return repeat(once, (elapsed) => options.intervalMs - elapsed);
}
