import { createServer } from 'node:http';
import { envelopeMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { createLogger } from '@gpualert/log';
import {
  emptyNotifierState,
  loadNotifierState,
  loadRoutes,
  matches,
  NotifierCore,
  parseMatcher,
  RoutesFile,
  saveNotifierState,
  type Matcher,
  type NotifierState,
} from '@gpualert/notify';
import { FIRING_KEY, GROUPS_KEY, NotifierStateStore, SILENCES_KEY, startNotifier, STATE_KEY } from '@gpualert/notifier';
import { newEnvelope, TOPICS, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { RedisStore } from '@gpualert/state/redis';
import { MemoryBus } from '@gpualert/bus';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { format, measure, median, percentile } from './harness.ts';

function alert(i: number, status: 'firing' | 'resolved', severity: AlertData['severity']): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: `a${i}-${status}`,
    host: `gpu-node-${i % 1000}`,
    source: 'bench',
    labels: { cluster: 'lab' },
    data: {
      fingerprint: `fp${i}`,
      status,
      severity,
      category: i % 2 ? 'thermal' : 'xid',
      rule: 'r',
      summary: `alert ${i}`,
      starts_at: new Date().toISOString(),
      evidence: [],
    },
  });
}

const STATE_KEYS = new Set([STATE_KEY, GROUPS_KEY, FIRING_KEY]);

/** A store that counts what the notifier's steps write of its state: characters per step, and group fields. */
class TimedStore extends MemoryStore {
  /** Steps begun (each reads the silences first). */
  steps = 0;
  /** Characters written to the state's keys, per step. */
  readonly perStep: number[] = [];
  groupFields = 0;
  override async set(key: string, value: string, options?: { ttlMs?: number }): Promise<void> {
    if (STATE_KEYS.has(key)) this.wrote(value.length);
    await super.set(key, value, options);
  }
  override async hashSet(key: string, fields: Readonly<Record<string, string>>): Promise<void> {
    if (STATE_KEYS.has(key)) for (const text of Object.values(fields)) this.wrote(text.length);
    if (key === GROUPS_KEY) this.groupFields += Object.keys(fields).length;
    await super.hashSet(key, fields);
  }
  override async hashGetAll(key: string): Promise<Record<string, string>> {
    if (key === SILENCES_KEY) {
      this.steps += 1;
      this.perStep.push(0);
    }
    return super.hashGetAll(key);
  }
  private wrote(chars: number): void {
    if (this.perStep.length > 0) this.perStep[this.perStep.length - 1]! += chars;
  }
  /** All characters written to the state keys so far (the store's size of them). */
  async stateChars(): Promise<number> {
    let chars = (await this.get(STATE_KEY))?.length ?? 0;
    for (const key of [GROUPS_KEY, FIRING_KEY]) for (const text of Object.values(await super.hashGetAll(key))) chars += text.length;
    return chars;
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
    receivers: [
      { name: 'pager', channel: 'record' },
      { name: 'chat', channel: 'record' },
      { name: 'record', channel: 'record' },
    ],
    route: {
      receiver: 'record',
      group_by: ['host', 'category'],
      group_wait: '30s',
      group_interval: '5m',
      repeat_interval: '4h',
      routes: [
        { receiver: 'pager', matchers: ['severity="critical"', 'expected="false"'], page: true, continue: true },
        { receiver: 'chat', matchers: ['severity=~"warning|error|critical"'] },
      ],
    },
    inhibit_rules: [{ source: ['category="host_down"'], target: ['category!="host_down"', 'category!="maintenance"'], equal: ['host'] }],
  });
  const bus = new MemoryBus();
  const store = new TimedStore();
  const notifier = await startNotifier({ bus, store, log: createLogger({ name: 'bench', level: 'silent' }), routes, env: {}, flushEveryMs: 1_000 });
  const at = (i: number, category: string, severity: AlertData['severity']) =>
    newEnvelope({
      type: 'alert',
      host: `gpu-node-${i}`,
      source: 'bench',
      labels: { cluster: 'lab' },
      data: {
        fingerprint: `fp-${category}-${i}`,
        status: 'firing',
        severity,
        category: category as AlertData['category'],
        rule: 'r',
        summary: `${category} on gpu-node-${i}`,
        starts_at: new Date().toISOString(),
        evidence: [],
      },
    });
  // A batch's step has saved once its groups are written (every alert here opens a group).
  const settle = async (groupFields: number) => {
    while (store.groupFields < groupFields) await new Promise((r) => setTimeout(r, 5));
  };
  // The longest the event loop was held: a 10 ms timer's lateness, as an HTTP request (/healthz) would wait.
  let lagMs = 0;
  let expected = performance.now() + 10;
  const probe = setInterval(() => {
    const now = performance.now();
    lagMs = Math.max(lagMs, now - expected);
    expected = now + 10;
  }, 10);
  const delay = {
    reset: () => {
      lagMs = 0;
    },
    get maxMs() {
      return lagMs;
    },
  };
  try {
    const warm = Array.from({ length: 4_000 }, (_, i) => envelopeMessage(at(i, 'thermal', 'warning')));
    for (let i = 0; i < warm.length; i += 500) {
      const before = store.groupFields;
      await bus.publish(TOPICS.alerts, warm.slice(i, i + 500));
      await settle(before + 500);
    }
    await new Promise((r) => setTimeout(r, 1_500));
    const rows: string[] = [];
    for (let notice = 0; notice < 6; notice += 1) {
      const batch = Array.from({ length: 1_000 }, (_, i) => envelopeMessage(at(10_000 + notice * 1_000 + i, 'maintenance', 'info')));
      delay.reset();
      const started = performance.now();
      const before = store.groupFields;
      const steps = store.steps;
      await bus.publish(TOPICS.alerts, batch);
      await settle(before + 1_000);
      const ms = performance.now() - started;
      const written = store.perStep.slice(steps - 1);
      rows.push(
        `notice ${notice + 1}: ${format(ms)} ms to decide and save, event loop blocked up to ${format(delay.maxMs)} ms, state ${format((await store.stateChars()) / 1e6)} MB, ${store.steps - steps} steps wrote ${format(written.reduce((a, b) => a + b, 0) / 1e6)} MB`,
      );
    }
    // A second of timer flushes with ~10,000 groups and 6,000 silences: what /healthz waits behind.
    delay.reset();
    const stepsBefore = store.steps;
    const started = performance.now();
    await new Promise((r) => setTimeout(r, 3_000));
    const timerSteps = store.perStep.slice(stepsBefore);
    rows.push(
      `then 3 s of timer flushes: ${store.steps - stepsBefore} steps writing a median of ${format(median(timerSteps))} characters, event loop blocked up to ${format(delay.maxMs)} ms (${format(performance.now() - started)} ms wall)`,
    );
    rows.push(...(await saveAtScale(routes, notifier.state(), at)));
    for (const row of rows) console.log(row);
    console.log(`groups open: ${Object.keys(notifier.state().groups).length}, silences: ${Object.keys(notifier.state().silences).length}`);
  } finally {
    clearInterval(probe);
    await notifier.stop();
    await bus.close();
  }
}

/**
 * One step's save at this size, apart from the rest of the step: one new alert among the open
 * groups, decided by the core, then saved as the notifier does now (what the step changed) and as
 * it did before (the whole state, one document). Median of 9 steps, each a new alert; CPU time as
 * well as wall time, as these machines are shared.
 */
async function saveAtScale(
  routes: RoutesFile,
  committed: Readonly<NotifierState>,
  at: (i: number, category: string, severity: AlertData['severity']) => EnvelopeOf<'alert'>,
): Promise<string[]> {
  const core = new NotifierCore(routes);
  const saver = new NotifierStateStore(new MemoryStore(), createLogger({ name: 'bench', level: 'silent' }));
  const state = Object.assign(await saver.load(), loadNotifierState(saveNotifierState(committed)).state);
  await saver.save(state); // every field, once: what a migration writes
  const now = Date.now();
  const timed = async <T>(fn: () => T | Promise<T>) => {
    const cpu = process.cpuUsage();
    const wall = performance.now();
    const value = await fn();
    const used = process.cpuUsage(cpu);
    return { value, ms: performance.now() - wall, cpuMs: (used.user + used.system) / 1_000 };
  };
  const now_: { ms: number; cpuMs: number; chars: number; fields: number }[] = [];
  const whole: { ms: number; cpuMs: number; chars: number }[] = [];
  for (let i = 0; i < 9; i += 1) {
    core.ingest(state, at(90_000 + i, 'thermal', 'warning'), now);
    core.flush(state, now);
    const step = await timed(() => saver.save(state));
    now_.push({ ms: step.ms, cpuMs: step.cpuMs, chars: step.value.chars, fields: step.value.fields });
    const before = await timed(() => saveNotifierState(state));
    whole.push({ ms: before.ms, cpuMs: before.cpuMs, chars: before.value.length });
  }
  const m = <T>(xs: T[], f: (x: T) => number) => format(median(xs.map(f)));
  return [
    `one step's save, one new alert among ${format(Object.keys(state.groups).length)} groups (median of 9): ${m(now_, (s) => s.ms)} ms (${m(now_, (s) => s.cpuMs)} ms CPU), ${m(now_, (s) => s.chars)} characters in ${m(now_, (s) => s.fields)} fields`,
    `the same step saved whole, as before (one document): ${m(whole, (s) => s.ms)} ms (${m(whole, (s) => s.cpuMs)} ms CPU), ${m(whole, (s) => s.chars / 1e6)} MB`,
  ];
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
    console.log(
      `${'critical alert published → page at the receiver (Kafka acks, consume, decide, outbox, POST)'.padEnd(58)} p50 ${format(median(latencies))} ms, p99 ${format(percentile(latencies, 99))} ms (${latencies.length}/300)`,
    );
  } finally {
    await bus.close();
    await store.close();
    pager.close();
    await broker?.destroy();
    await redis.stop();
  }
}
