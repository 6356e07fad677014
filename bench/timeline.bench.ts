import { envelopeMessage, KafkaBus } from '@gpualert/bus';
import { syntheticFleet } from '@gpualert/test-support';
import { TOPICS } from '@gpualert/schema';
import { exportTimeline } from '@gpualert/timeline';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { format } from './harness.ts';

/**
 * A day of a 1,000-GPU fleet's samples (125 hosts × 8 GPUs, one scrape per 10 s) on the real
 * Kafka, then one hour of timeline from it. GPUALERT_BENCH_TIMELINE_HOURS shortens the day.
 */
export async function benchTimeline(): Promise<void> {
  const hours = Number(process.env.GPUALERT_BENCH_TIMELINE_HOURS ?? 24);
  console.log(`\n## Timeline: one hour out of ${hours} h of a 1,000-GPU fleet's samples on Kafka`);
  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const bus = new KafkaBus({ brokers: (process.env.KAFKA_BROKERS ?? broker!.brokers).split(','), topicPrefix: `bench-timeline-${Date.now()}.`, partitions: 6 });
  const start = Date.parse('2026-06-01T00:00:00Z');
  try {
    await bus.ensureTopics(Object.values(TOPICS));
    const loadStarted = performance.now();
    let chunk: ReturnType<typeof envelopeMessage>[] = [];
    let samples = 0;
    let pending: Promise<void>[] = [];
    for (const envelope of syntheticFleet({ hosts: 125, gpusPerHost: 8, start, minutes: hours * 60, seed: 9 })) {
      if (envelope.type !== 'gpu.sample') continue;
      chunk.push(envelopeMessage(envelope));
      samples += 1;
      if (chunk.length === 1_000) {
        pending.push(bus.publish(TOPICS.gpuSamples, chunk));
        chunk = [];
        if (pending.length >= 8) {
          await Promise.all(pending);
          pending = [];
        }
      }
    }
    pending.push(bus.publish(TOPICS.gpuSamples, chunk));
    await Promise.all(pending);
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    console.log(`${'loaded'.padEnd(58)} ${format(samples).padStart(12)} sample messages in ${format(loadSeconds)} s`);
    const runs: number[] = [];
    let entries = 0;
    let minutes = 0;
    for (let i = 0; i < 3; i += 1) {
      const hour = start + Math.floor(hours / 2) * 3_600_000;
      const t0 = performance.now();
      const { timeline } = await exportTimeline(bus, { from: hour, to: hour + 3_600_000 - 1, format: 'json' });
      runs.push((performance.now() - t0) / 1000);
      entries = timeline.entries.length;
      minutes = timeline.metrics.length;
    }
    runs.sort((a, b) => a - b);
    console.log(
      `${'one-hour timeline, every host (json)'.padEnd(58)} ${format(runs[1]!).padStart(12)} s  (median of 3; ${minutes} per-minute summaries, ${entries} events)`,
    );
  } finally {
    await bus.close();
    await broker?.destroy();
  }
}
