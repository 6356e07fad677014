import { envelopeMessage, type Bus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { createLogger } from '@gpualert/log';
import { RoutesFile } from '@gpualert/notify';
import { NotifierMetrics, startNotifier, type RunningNotifier } from '@gpualert/notifier';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { RedisStore } from '@gpualert/state/redis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { VendorReceivers } from './infra/vendor-receivers.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

/**
 * Alertmanager's HA model on the real Kafka and Redis: every replica reads every alert; the first
 * sends, the others wait their position × peer timeout and send only what the cluster's logs say
 * nobody sent. Checked at the loopback Slack and PagerDuty, which count every request.
 */
const log = createLogger({ name: 'test', level: 'silent' });
const ROUTING_KEY = 'R0UTINGKEY0000000000000000000000';
const PEER_TIMEOUT_MS = 3_000;
const FAST_RETRY = { baseMs: 100, maxDelayMs: 1_000, giveUpAfterMs: 20_000 };
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ROUTES = (base: string) =>
  RoutesFile.parse({
    receivers: [
      { name: 'chat', channel: 'slack', settings: { url: `${base}/slack/hooks` } },
      { name: 'pd', channel: 'pagerduty', settings: { url: `${base}/pagerduty/v2/enqueue`, routing_key: 'env:PD_KEY' } },
    ],
    route: {
      receiver: 'chat',
      group_by: ['cluster'],
      group_wait: '1s',
      group_interval: '2s',
      repeat_interval: '4h',
      routes: [
        { receiver: 'pd', page: true, continue: true },
        { receiver: 'chat', group_by: ['cluster'] },
      ],
    },
  });

function alert(fingerprint: string, status: 'firing' | 'resolved'): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: `${fingerprint}-${status}`,
    host: 'gpu-node-007',
    source: 'test',
    labels: { cluster: 'lab' },
    data: {
      fingerprint,
      status,
      severity: 'critical',
      category: 'fallen_off_bus',
      rule: 'gpu-absent',
      summary: `GPU fell off the bus (${fingerprint})`,
      starts_at: new Date().toISOString(),
      evidence: [],
      ...(status === 'resolved' ? { ends_at: new Date().toISOString() } : {}),
    },
  });
}

interface Replica {
  readonly name: string;
  readonly notifier: RunningNotifier;
  readonly metrics: NotifierMetrics;
}

async function setup() {
  const vendors = new VendorReceivers({ feishu: 'f', dingtalk: 'd', webhook: 'w', opsgenie: 'o', routingKey: ROUTING_KEY });
  await vendors.start();
  cleanups.push(() => vendors.stop());
  const name = uniqueName('cluster');
  const bus: Bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${name}.`, partitions: 3 });
  await bus.ensureTopics(Object.values(TOPICS));
  cleanups.push(() => bus.close());
  const store: StateStore = new RedisStore({ url: inject('redisUrl'), prefix: `${name}:` });
  cleanups.push(() => store.close());
  const routes = ROUTES(vendors.base);
  const replicas: Replica[] = [];
  /** A replica, or (`cluster: false`) a notifier that reads every alert in a group of its own and knows of no other. */
  const start = async (replica: string, options: { cluster?: boolean } = {}): Promise<Replica> => {
    const metrics = new NotifierMetrics();
    const notifier = await startNotifier({
      bus,
      store,
      log,
      routes,
      env: { PD_KEY: ROUTING_KEY },
      retry: FAST_RETRY,
      flushEveryMs: 100,
      metrics,
      ...(options.cluster === false ? { group: `alone-${replica}` } : { cluster: { replica, peerTimeoutMs: PEER_TIMEOUT_MS } }),
    });
    const started = { name: replica, notifier, metrics };
    replicas.push(started);
    cleanups.push(async () => {
      if (replicas.includes(started)) await notifier.stop();
    });
    return started;
  };
  const stop = async (replica: Replica) => {
    replicas.splice(replicas.indexOf(replica), 1);
    await replica.notifier.stop();
  };
  /** Every replica's consumer in its group: an alert published now reaches each. */
  const allReady = () => waitFor(async () => (await Promise.all(replicas.map((r) => r.notifier.ready()))).every((r) => r.ready), 'every replica ready', 60_000);
  const pages = () => vendors.of('pagerduty').map((r) => `${String(r.body.event_action)}:${String(r.body.dedup_key)}`);
  const chats = () => vendors.of('slack').length;
  const publish = (alerts: EnvelopeOf<'alert'>[]) => bus.publish(TOPICS.alerts, alerts.map(envelopeMessage));
  return { vendors, bus, store, start, stop, allReady, pages, chats, publish };
}

/** What a replica sent, by receiver, from its own metrics. */
async function sentBy(replica: Replica): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await replica.metrics.notifications.get()).values) if (v.labels.outcome === 'sent') out[String(v.labels.receiver)] = v.value;
  return out;
}

const faults = (n: number, status: 'firing' | 'resolved', tag: string) => Array.from({ length: n }, (_, i) => alert(`${tag}-${i}`, status));

describe('a notifier cluster (Alertmanager HA)', () => {
  it('first, the control: three notifiers that each read every alert and know of no other send each page three times', async () => {
    const { start, allReady, publish, pages } = await setup();
    for (const name of ['a', 'b', 'c']) await start(name, { cluster: false });
    await allReady();
    await publish(faults(2, 'firing', 'alone'));
    await waitFor(() => pages().length === 6, 'three pages per fault', 30_000);
    expect(new Set(pages())).toEqual(new Set(['trigger:alone-0', 'trigger:alone-1']));
  });

  it('three healthy replicas send each page and each group message once, all from the first; the same for the resolves', async () => {
    const { vendors, start, allReady, publish, pages, chats } = await setup();
    const replicas = [await start('notifier-2'), await start('notifier-0'), await start('notifier-1')];
    await allReady();
    await waitFor(() => replicas.every((r) => r.notifier.cluster?.().peers.length === 3), 'every replica to see three members', 30_000);
    expect(replicas.map((r) => r.notifier.cluster?.().peers.map((p) => p.name))).toEqual(Array(3).fill(['notifier-0', 'notifier-1', 'notifier-2']));

    await publish(faults(5, 'firing', 'fault'));
    await waitFor(() => pages().length === 5 && chats() === 1, 'five pages and one group message', 30_000);
    // Past every replica's wait (2 × peer timeout) and a group interval: nothing more comes.
    await pause(2 * PEER_TIMEOUT_MS + 3_000);
    expect(pages().sort()).toEqual(
      faults(5, 'firing', 'fault')
        .map((a) => `trigger:${a.data.fingerprint}`)
        .sort(),
    );
    expect(chats()).toBe(1);

    await publish(faults(5, 'resolved', 'fault'));
    await waitFor(() => pages().length === 10 && chats() === 2, 'five resolves and the group resolved', 30_000);
    await pause(2 * PEER_TIMEOUT_MS + 3_000);
    expect(pages().filter((p) => p.startsWith('resolve:'))).toHaveLength(5);
    expect(chats()).toBe(2);
    // Sent by the first replica (sorted by name), as Alertmanager's first peer sends when healthy.
    const [second, first, third] = await Promise.all(replicas.map(sentBy));
    expect(first).toEqual({ pd: 10, chat: 2 });
    expect([second, third]).toEqual([{}, {}]);
  });

  it('a replica behind one that is alive but sends nothing waits its peer timeout, then sends each page and message once', async () => {
    const { vendors, store, start, allReady, publish, pages, chats } = await setup();
    // A member sorted first whose heartbeat is there but who never sends (hung, or cut off from the pager).
    await store.set('notifier:alive:ghost', '1', { ttlMs: 120_000 });
    await store.hashSet('notifier:cluster:members', { 'notifier-0': JSON.stringify({ instance: 'ghost', seen: Date.now() }) });
    const second = await start('notifier-1');
    await allReady();
    expect(second.notifier.cluster?.().peers.map((p) => p.name)).toEqual(['notifier-0', 'notifier-1']);
    const published = Date.now();
    await publish(faults(3, 'firing', 'late'));
    await waitFor(() => pages().length === 3 && chats() === 1, 'the pages and the message from the second replica', 30_000);
    // It waited for the one before it (a slow machine only makes this later, never earlier).
    expect(Math.min(...vendors.of('pagerduty').map((r) => r.at)) - published).toBeGreaterThanOrEqual(PEER_TIMEOUT_MS);
    await pause(PEER_TIMEOUT_MS + 3_000);
    expect(pages()).toHaveLength(3);
    expect(chats()).toBe(1);
    expect(await sentBy(second)).toEqual({ pd: 3, chat: 1 });
  });

  it('when the first replica stops, the next moves up and sends what comes after, once', async () => {
    const { start, stop, allReady, publish, pages, chats } = await setup();
    const first = await start('notifier-0');
    const second = await start('notifier-1');
    await allReady();
    await waitFor(() => second.notifier.cluster?.().peers.length === 2, 'two members', 30_000);
    await publish(faults(2, 'firing', 'before'));
    await waitFor(() => pages().length === 2 && chats() === 1, 'the first pages', 30_000);
    await stop(first);
    await waitFor(() => second.notifier.cluster?.().peers.length === 1, 'the second replica alone', 30_000);
    await publish([...faults(2, 'firing', 'after'), ...faults(2, 'resolved', 'before')]);
    await waitFor(() => pages().length === 6, 'the new pages and the resolves', 30_000);
    await pause(PEER_TIMEOUT_MS + 3_000);
    expect(pages().sort()).toEqual(['resolve:before-0', 'resolve:before-1', 'trigger:after-0', 'trigger:after-1', 'trigger:before-0', 'trigger:before-1']);
    expect(await sentBy(second)).toMatchObject({ pd: 4 });
  });

  it('a replica that joins later reads the alerts topic from its start only: faults that fired and resolved before it are not paged again', async () => {
    const { start, allReady, publish, pages } = await setup();
    const first = await start('notifier-1');
    await allReady();
    await publish(faults(2, 'firing', 'old'));
    await waitFor(() => pages().length === 2, 'the pages', 30_000);
    await publish(faults(2, 'resolved', 'old'));
    await waitFor(() => pages().length === 4, 'the resolves', 30_000);
    // Sorted first, so it sends at once: had it read the topic's history as news, it would page both again.
    const late = await start('notifier-0');
    await allReady();
    await waitFor(() => first.notifier.cluster?.().peers.length === 2, 'notifier-1 to see the new replica before it', 30_000);
    await publish(faults(1, 'firing', 'new'));
    await waitFor(() => pages().length === 5, 'the new fault paged', 30_000);
    await pause(PEER_TIMEOUT_MS + 3_000);
    expect(pages().filter((p) => p.startsWith('trigger:old'))).toHaveLength(2);
    expect(await sentBy(late)).toMatchObject({ pd: 1 });
  });
});
