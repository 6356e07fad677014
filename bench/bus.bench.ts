import { envelopeMessage, MemoryBus, type Bus, type OutgoingMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { Envelope, isCanonicalGpuSample, newEnvelope, parseEnvelope } from '@gpualert/schema';
import { readFileSync } from 'node:fs';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { format, measure, median, percentile } from './harness.ts';

const recording = readFileSync(new URL('../test/fixtures/recordings/example-thermal-xid13-gcp.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '');
const sampleLine = recording.find((l) => l.includes('"gpu.sample"'))!;

function samples(count: number, hosts: number): OutgoingMessage[] {
  const template = JSON.parse(sampleLine) as { data: unknown; labels: Record<string, string> };
  return Array.from({ length: count }, (_, i) =>
    envelopeMessage(
      newEnvelope({
        type: 'gpu.sample',
        host: `host-${i % hosts}`,
        source: 'bench',
        labels: template.labels,
        data: template.data as never,
      }),
    ),
  );
}

async function roundTrip(bus: Bus, messages: OutgoingMessage[], group: string): Promise<number> {
  let seen = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((r) => (done = r));
  const sub = await bus.consume({
    group,
    topics: ['bench.samples'],
    handler: async (batch) => {
      seen += batch.items.length;
      if (seen >= messages.length) done();
    },
  });
  for (let i = 0; i < messages.length; i += 500) await bus.publish('bench.samples', messages.slice(i, i + 500));
  await finished;
  await sub.stop();
  return messages.length;
}

export async function benchBus(): Promise<void> {
  console.log('\n## Envelope parsing and the bus');
  const bytes = samples(2_000, 100).map((m) => Buffer.from(m.value));
  await measure('parseEnvelope, 4-GPU gpu.sample', 'msgs/s', 5, () => {
    for (const b of bytes) if (!parseEnvelope(b).ok) throw new Error('bad sample');
    return bytes.length;
  });
  if (!isCanonicalGpuSample(JSON.parse(bytes[0]!.toString()))) throw new Error('the bench sample does not take the fast path');
  await measure('  the same through the full schema (no fast path)', 'msgs/s', 5, () => {
    for (const b of bytes) if (!Envelope.safeParse(JSON.parse(b.toString())).success) throw new Error('bad sample');
    return bytes.length;
  });

  const memory = new MemoryBus({ partitions: 6 });
  await memory.ensureTopics(['bench.samples']);
  let run = 0;
  await measure('in-process bus: publish + consume (validated)', 'msgs/s', 5, () => roundTrip(memory, samples(20_000, 1000), `m${run++}`));
  await memory.close();

  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const brokers = (process.env.KAFKA_BROKERS ?? broker!.brokers).split(',');
  const kafka = new KafkaBus({ brokers, topicPrefix: `bench-${Date.now()}.`, partitions: 6 });
  try {
    await kafka.ensureTopics(['bench.samples', 'bench.latency']);
    await measure('Kafka bus: publish + consume (acks=-1, validated)', 'msgs/s', 3, () => roundTrip(kafka, samples(20_000, 1000), `k${run++}`));

    const latencies: number[] = [];
    const publishes: number[] = [];
    const sent = new Map<string, number>();
    const sub = await kafka.consume({
      group: 'latency',
      topics: ['bench.latency'],
      fromBeginning: false,
      handler: async (batch) => {
        for (const { envelope } of batch.items) {
          const t = sent.get(envelope.id);
          if (t !== undefined) latencies.push(performance.now() - t);
        }
      },
    });
    await new Promise((r) => setTimeout(r, 2_000));
    for (let i = 0; i < 300; i += 1) {
      const message = samples(1, 1)[0]!;
      const id = (JSON.parse(String(message.value)) as { id: string }).id;
      const t = performance.now();
      sent.set(id, t);
      await kafka.publish('bench.latency', [message]);
      publishes.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 5));
    }
    const deadline = Date.now() + 10_000;
    while (latencies.length < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await sub.stop();
    console.log(`${'Kafka publish until acked, one message'.padEnd(58)} p50 ${format(median(publishes))} ms, p99 ${format(percentile(publishes, 99))} ms`);
    console.log(
      `${'Kafka publish to consumer handler, one message'.padEnd(58)} p50 ${format(median(latencies))} ms, p99 ${format(percentile(latencies, 99))} ms (${latencies.length}/300 seen)`,
    );
  } finally {
    await kafka.close();
    await broker?.destroy();
  }
}
