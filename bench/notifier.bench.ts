import { createServer } from 'node:http';
import { envelopeMessage, KafkaBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { emptyNotifierState, loadRoutes, matches, NotifierCore, parseMatcher, RoutesFile, type Matcher } from '@gpualert/notify';
import { startNotifier } from '@gpualert/notifier';
import { newEnvelope, TOPICS, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore, RedisStore } from '@gpualert/state';
import { MemoryBus } from '@gpualert/bus';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { format, measure, median, percentile } from './harness.ts';

function alert(i: number, status: 'firing' | 'resolved', severity: AlertData['severity']): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert', id: `a${i}-${status}`, host: `gpu-node-${i % 1000}`, source: 'bench', labels: { cluster: 'lab' },
    data: { fingerprint: `fp${i}`, status, severity, category: i % 2 ? 'thermal' : 'xid', rule: 'r', summary: `alert ${i}`, starts_at: new Date().toISOString(), evidence: [] },
  });
}

/** A store that times the notifier's per-step saves of its state. */
class TimedStore extends MemoryStore {
  saves = 0;
  saveMs = 0;
  lastSize = 0;
  override async set(key: string, value: string, options?: { ttlMs?: number }): Promise<void> {
    if (key === 'notifier:state') {
      this.saves += 1;
      this.lastSize = value.length;
    }
    await super.set(key, value, options);
  }
}

/**
 * The attack's case (issue 22): ~10,000 open groups, then six 1,000-host maintenance notices in a
 * row. Each maintenance alert opens a group and a pager silence. Reported: how long each notice
 * takes to be decided and saved, the longest the event loop was blocked meanwhile (what /healthz
 * waits), and the saved state's size. In-process bus and store: the notifier's own cost.
 */
export async function benchNotifierAtScale(): Promise<void> {
  console.log('\n## Notifier at scale: 4,000 open groups, then six 1,000-host maintenance notices (in-process bus and store)');
  const routes = RoutesFile.parse({
    receivers: [{ name: 'pager', channel: 'record' }, { name: 'chat', channel: 'record' }, { name: 'record', channel: 'record' }],
    route: {
      receiver: 'record', group_by: ['host', 'category'], group_wait: '30s', group_interval: '5m', repeat_interval: '4h',
      routes: [{ receiver: 'pager', matchers: ['severity="critical"', 'expected="false"'], page: true, continue: true }, { receiver: 'chat', matchers: ['severity=~"warning|error|critical"'] }],
    },
    inhibit_rules: [{ source: ['category="host_down"'], target: ['category!="host_down"', 'category!="maintenance"'], equal: ['host'] }],
  });
  const bus = new MemoryBus();
  const store = new TimedStore();
  const notifier = await startNotifier({ bus, store, log: createLogger({ name: 'bench', level: 'silent' }), routes, env: {}, flushEveryMs: 1_000 });
  const at = (i: number, category: string, severity: AlertData['severity']) => newEnvelope({
    type: 'alert', host: `gpu-node-${i}`, source: 'bench', labels: { cluster: 'lab' },
    data: { fingerprint: `fp-${category}-${i}`, status: 'firing', severity, category: category as AlertData['category'], rule: 'r', summary: `${category} on gpu-node-${i}`, starts_at: new Date().toISOString(), evidence: [] },
  });
  const settle = async (saves: number) => {
    while (store.saves < saves) await new Promise((r) => setTimeout(r, 5));
  };
  // The longest the event loop was held: a 10 ms timer's lateness, as an HTTP request (/healthz) would wait.
  let lagMs = 0;
  let expected = performance.now() + 10;
  const probe = setInterval(() => {
    const now = performance.now();
    lagMs = Math.max(lagMs, now - expected);
    expected = now + 10;
  }, 10);
  const delay = { reset: () => { lagMs = 0; }, get maxMs() { return lagMs; } };
  try {
    const warm = Array.from({ length: 4_000 }, (_, i) => envelopeMessage(at(i, 'thermal', 'warning')));
    let saves = store.saves;
    for (let i = 0; i < warm.length; i += 500) {
      await bus.publish(TOPICS.alerts, warm.slice(i, i + 500));
      await settle(saves + 1);
      saves = store.saves;
    }
    await new Promise((r) => setTimeout(r, 1_500));
    const rows: string[] = [];
    for (let notice = 0; notice < 6; notice += 1) {
      const batch = Array.from({ length: 1_000 }, (_, i) => envelopeMessage(at(10_000 + notice * 1_000 + i, 'maintenance', 'info')));
      delay.reset();
      const started = performance.now();
      const before = store.saves;
      await bus.publish(TOPICS.alerts, batch);
      await settle(before + 1);
      const ms = performance.now() - started;
      rows.push(`notice ${notice + 1}: ${format(ms)} ms to decide and save, event loop blocked up to ${format(delay.maxMs)} ms, state ${format(store.lastSize / 1e6)} MB, ${store.saves - before} saves`);
    }
    // A second of timer flushes with ~10,000 groups and 6,000 silences: what /healthz waits behind.
    delay.reset();
    const savesBefore = store.saves;
    const started = performance.now();
    await new Promise((r) => setTimeout(r, 3_000));
    rows.push(`then 3 s of timer flushes: ${store.saves - savesBefore} saves, event loop blocked up to ${format(delay.maxMs)} ms (${format(performance.now() - started)} ms wall)`);
    // One per-step save at this size (the notifier saves its whole state after every step: each batch and each timer flush).
    const state = notifier.state();
    const saveMs: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const t = performance.now();
      JSON.stringify(state);
      saveMs.push(performance.now() - t);
    }
    rows.push(`one save of the whole state (serialising ${format(store.lastSize / 1e6)} MB): ${format(median(saveMs))} ms (median of 5)`);
    for (const row of rows) console.log(row);
    console.log(`groups open: ${Object.keys(notifier.state().groups).length}, silences: ${Object.keys(notifier.state().silences).length}`);
  } finally {
    clearInterval(probe);
    await notifier.stop();
    await bus.close();
  }
}

export async function benchNotifier(): Promise<void> {
  await benchNotifierAtScale();
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
