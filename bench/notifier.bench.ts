import { createServer } from 'node:http';
import { envelopeMessage, KafkaBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { emptyNotifierState, loadRoutes, matches, NotifierCore, parseMatcher, RoutesFile, type Matcher } from '@gpualert/notify';
import { startNotifier } from '@gpualert/notifier';
import { newEnvelope, TOPICS, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import { RedisStore } from '@gpualert/state';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { format, measure, median, percentile } from './harness.ts';

function alert(i: number, status: 'firing' | 'resolved', severity: AlertData['severity']): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert', id: `a${i}-${status}`, host: `gpu-node-${i % 1000}`, source: 'bench', labels: { cluster: 'lab' },
    data: { fingerprint: `fp${i}`, status, severity, category: i % 2 ? 'thermal' : 'xid', rule: 'r', summary: `alert ${i}`, starts_at: new Date().toISOString(), evidence: [] },
  });
}

export async function benchNotifier(): Promise<void> {
  console.log('\n## Notifier: routing and dedup decisions; alert to page through the real Kafka');
  const routes = loadRoutes();
  if (!routes.ok) throw new Error('routes');
  const severities: AlertData['severity'][] = ['warning', 'error', 'critical', 'info'];
  const alerts = Array.from({ length: 20_000 }, (_, i) => alert(i, 'firing', severities[i % 4]!));
  const resolves = alerts.map((a, i) => alert(i, 'resolved', a.data.severity));
  await measure('decisions (route, silence, inhibit, group, dedup), one core', 'alerts/s', 5, () => {
    const core = new NotifierCore(routes.value);
    const state = emptyNotifierState();
    const t = Date.now();
    for (const a of alerts) core.ingest(state, a, t);
    core.flush(state, t + 31_000);
    for (const r of resolves) core.ingest(state, r, t + 60_000);
    core.flush(state, t + 400_000);
    return alerts.length + resolves.length;
  });

  // User-written regexes run on RE2 (linear time) since issue 12; the backtracking engine they replaced, for scale.
  const hosts = Array.from({ length: 10_000 }, (_, i) => ({ host: `gpu-node-${String(i).padStart(3, '0')}` }));
  for (const text of ['host=~"gpu-node-(1|2|3)[0-9]*"', 'severity=~"critical|error|warning"', 'host=~"(?i)GPU-NODE-[[:digit:]]+"']) {
    const re2 = parseMatcher(text) as Matcher;
    await measure(`matcher ${text}, RE2 (re2js)`, 'matches/s', 5, () => {
      for (const labels of hosts) matches(re2, labels);
      return hosts.length;
    });
    const value = (re2.value.startsWith('(?i)') ? re2.value.slice(4) : re2.value).replace('[[:digit:]]', '[0-9]');
    const js = new RegExp(`^(?:${value})$`, re2.value.startsWith('(?i)') ? 'i' : '');
    await measure(`matcher ${text}, JS RegExp (before)`, 'matches/s', 5, () => {
      for (const labels of hosts) js.test(labels.host);
      return hosts.length;
    });
  }
  const evil = parseMatcher('host=~"(.*){20}!"') as Matcher;
  await measure('matcher host=~"(.*){20}!" on 12-char hosts, RE2 (took 41 s a match on JS RegExp)', 'matches/s', 5, () => {
    for (const labels of hosts) matches(evil, labels);
    return hosts.length;
  });

  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const redis = await ensureRedis();
  const received = new Map<string, number>();
  const pager = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { dedup_key: string };
      received.set(body.dedup_key, performance.now());
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"success"}');
    });
  });
  await new Promise<void>((r) => pager.listen(0, '127.0.0.1', r));
  const port = (pager.address() as { port: number }).port;
  const bus = new KafkaBus({ brokers: (process.env.KAFKA_BROKERS ?? broker!.brokers).split(','), topicPrefix: `bench-notify-${Date.now()}.`, partitions: 6 });
  const store = new RedisStore({ url: redis.url, prefix: `bench-notify-${Date.now()}:` });
  try {
    await bus.ensureTopics(Object.values(TOPICS));
    const pageRoutes = RoutesFile.parse({
      receivers: [{ name: 'pager', channel: 'pagerduty', settings: { url: `http://127.0.0.1:${port}/v2/enqueue`, routing_key: 'x'.repeat(32) } }],
      route: { receiver: 'pager', page: true },
    });
    const notifier = await startNotifier({ bus, store, log: createLogger({ name: 'bench', level: 'silent' }), routes: pageRoutes, env: {} });
    await new Promise((r) => setTimeout(r, 3_000)); // the group settles
    const latencies: number[] = [];
    for (let i = 0; i < 300; i += 1) {
      const a = alert(1_000_000 + i, 'firing', 'critical');
      const started = performance.now();
      await bus.publish(TOPICS.alerts, [envelopeMessage(a)]);
      const deadline = Date.now() + 5_000;
      while (!received.has(a.data.fingerprint) && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      if (received.has(a.data.fingerprint)) latencies.push(received.get(a.data.fingerprint)! - started);
    }
    await notifier.stop();
    console.log(`${'critical alert published → page at the receiver (Kafka acks, consume, decide, outbox, POST)'.padEnd(58)} p50 ${format(median(latencies))} ms, p99 ${format(percentile(latencies, 99))} ms (${latencies.length}/300)`);
  } finally {
    await bus.close();
    await store.close();
    pager.close();
    await broker?.destroy();
    await redis.stop();
  }
}
