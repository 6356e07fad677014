import { envelopeMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { syntheticFleet } from '@gpualert/test-support';
import { newEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import { exportTimeline, MAX_HOSTS_READ_BY_KEY } from '@gpualert/timeline';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { format } from './harness.ts';

/**
 * A day of a 1,000-GPU fleet's samples (125 hosts × 8 GPUs, one scrape per 10 s) on the real
 * Kafka, then one hour of timeline from it, and incidents in that hour on one host, on as many
 * hosts as the export reads one by one, and on one more. GPUALERT_BENCH_TIMELINE_HOURS shortens the day.
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
    const hour = start + Math.floor(hours / 2) * 3_600_000;
    // One incident in that hour: a GPU's alert and its member, a page that failed and was retried, an ack.
    const story = incidentStory(hour + 20 * 60_000);
    const wide = [MAX_HOSTS_READ_BY_KEY, MAX_HOSTS_READ_BY_KEY + 1].flatMap((hosts) => wideIncident(hour + 20 * 60_000, hosts));
    await bus.publish(TOPICS.alerts, [...story.filter((e) => e.type === 'alert'), ...wide].map(envelopeMessage));
    await bus.publish(TOPICS.notifications, story.filter((e) => e.type !== 'alert').map(envelopeMessage));
    const cases: [string, Parameters<typeof exportTimeline>[1]][] = [
      ['one-hour timeline, every host (json)', { from: hour, to: hour + 3_600_000 - 1, format: 'json' }],
      ['one-hour timeline, every host (html: charts and bands)', { from: hour, to: hour + 3_600_000 - 1, format: 'html' }],
      ['one incident in that hour, --incident (html post-mortem)', { from: hour, to: hour + 3_600_000 - 1, incident: 'bench-fp-member', format: 'html' }],
      [
        `an incident on ${MAX_HOSTS_READ_BY_KEY} hosts (the most read host by host)`,
        { from: hour, to: hour + 3_600_000 - 1, incident: `bench-wide-${MAX_HOSTS_READ_BY_KEY}-1`, format: 'html' },
      ],
      [
        `an incident on ${MAX_HOSTS_READ_BY_KEY + 1} hosts (past that: the fleet's read once)`,
        { from: hour, to: hour + 3_600_000 - 1, incident: `bench-wide-${MAX_HOSTS_READ_BY_KEY + 1}-1`, format: 'html' },
      ],
    ];
    for (const [name, request] of cases) {
      const runs: number[] = [];
      let entries = 0;
      let minutes = 0;
      for (let i = 0; i < 3; i += 1) {
        const t0 = performance.now();
        const { timeline } = await exportTimeline(bus, request);
        runs.push((performance.now() - t0) / 1000);
        entries = timeline.entries.length;
        minutes = timeline.metrics.length;
      }
      runs.sort((a, b) => a - b);
      console.log(`${name.padEnd(58)} ${format(runs[1]!).padStart(12)} s  (median of 3; ${minutes} per-minute summaries, ${entries} events)`);
    }
  } finally {
    await bus.close();
    await broker?.destroy();
  }
}

/** An incident on `hosts` hosts of the synthetic fleet (every 7th from gpu-node-003), one GPU alert on each: a cooling fault's. */
function wideIncident(at: number, hosts: number): Envelope[] {
  return Array.from({ length: hosts }, (_, i) =>
    newEnvelope({
      type: 'alert',
      id: `bench-wide-${hosts}-${i}`,
      host: `gpu-node-${String(3 + 7 * i).padStart(3, '0')}`,
      source: 'bench',
      ts: new Date(at + i * 1_000).toISOString(),
      data: {
        fingerprint: `bench-wide-${hosts}-${i}`,
        status: 'firing',
        severity: 'critical',
        category: 'thermal',
        rule: 'gpu-temp',
        gpu: { index: i % 8 },
        summary: `GPU ${i % 8} is hot`,
        starts_at: new Date(at + i * 1_000).toISOString(),
        evidence: [],
        ...(i > 0 ? { incident: `bench-wide-${hosts}-0` } : {}),
      },
    }),
  );
}

/** An incident on gpu-node-003's GPU 2 of the synthetic fleet: the root alert, a member, a failed page and its retry, an acknowledgement. */
function incidentStory(at: number): Envelope[] {
  const iso = (ms: number) => new Date(at + ms).toISOString();
  const alert = (id: string, fingerprint: string, ms: number, incident?: string) =>
    newEnvelope({
      type: 'alert',
      id,
      host: 'gpu-node-003',
      source: 'bench',
      ts: iso(ms),
      data: {
        fingerprint,
        status: 'firing',
        severity: 'critical',
        category: 'xid',
        rule: 'kernel-event',
        gpu: { index: 2 },
        summary: 'Xid 79 on GPU 2',
        starts_at: iso(ms),
        evidence: [],
        ...(incident ? { incident } : {}),
      },
    });
  return [
    alert('bench-root', 'bench-fp-root', 0),
    alert('bench-member', 'bench-fp-member', 30_000, 'bench-fp-root'),
    newEnvelope({
      type: 'notification',
      id: 'bench-page-1',
      host: 'gpu-node-003',
      source: 'bench',
      ts: iso(1_000),
      data: {
        receiver: 'pager',
        channel: 'pagerduty',
        fingerprints: ['bench-fp-root'],
        reason: 'page',
        outcome: 'failed',
        attempt: 1,
        retry_in_ms: 1_000,
        notification_id: 'n1',
      },
    }),
    newEnvelope({
      type: 'notification',
      id: 'bench-page-2',
      host: 'gpu-node-003',
      source: 'bench',
      ts: iso(2_500),
      data: { receiver: 'pager', channel: 'pagerduty', fingerprints: ['bench-fp-root'], reason: 'page', outcome: 'sent', attempt: 2, notification_id: 'n1' },
    }),
    newEnvelope({
      type: 'acknowledgement',
      id: 'bench-ack',
      host: 'pagerduty',
      source: 'bench',
      ts: iso(120_000),
      data: { pager: 'pagerduty', action: 'acknowledged', fingerprint: 'bench-fp-root', by: 'on-call', pager_incident: 'P1', pager_event: 'e1' },
    }),
  ];
}
