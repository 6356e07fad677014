import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { engineHostKey, enginePartitionKey, loadRuleSet } from '@gpualert/engine';
import { syntheticFleet } from '@gpualert/test-support';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startEngineService } from './engine-service.ts';
import { FORGET_KEY, requestHostForget } from './host-forgetting.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const ruleSet = rules.value;
const xids = catalog.value;
const DAY = 86_400_000;
const T0 = Date.parse('2026-06-01T00:00:00Z');
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Log lines as objects: what `host_forgotten` says, and how often. */
function capturingLog() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, log: createLogger({ name: 'test', level: 'info', destination }) };
}

async function until(what: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await what()) && Date.now() < deadline) await pause(20);
  expect(await what()).toBe(true);
}

/**
 * Three hosts report for a minute; gpu-node-000 then goes silent while the others report on, two
 * days later (event clock: the samples' time is the clock). One partition, so one stream.
 */
async function pipeline(forgetAfterMs: number) {
  const bus = new MemoryBus({ partitions: 1 });
  await bus.ensureTopics(Object.values(TOPICS));
  const store = new MemoryStore();
  const alerts: EnvelopeOf<'alert'>[] = [];
  const watch = await bus.consume({
    group: 'watch',
    topics: [TOPICS.alerts],
    handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
  });
  const { lines, log } = capturingLog();
  const start = () =>
    startEngineService({ bus, store, log, ruleSet, catalog: xids, clock: 'event', group: 'engines', tickMs: 50, sessionTimeoutMs: 1_000, forgetAfterMs });
  let engine = await start();
  const publish = async (events: Iterable<Envelope>) => {
    const list = [...events];
    await bus.publish(TOPICS.hostInventory, list.filter((e) => e.type === 'host.inventory').map(envelopeMessage));
    await bus.publish(TOPICS.gpuSamples, list.filter((e) => e.type === 'gpu.sample').map(envelopeMessage));
  };
  await publish(syntheticFleet({ hosts: 3, gpusPerHost: 2, start: T0, minutes: 1, seed: 5 }));
  await until(async () => (await store.get(engineHostKey('gpu-node-000'))) !== null);
  const later = (at: number, minutes = 2) =>
    [...syntheticFleet({ hosts: 3, gpusPerHost: 2, start: at, minutes, seed: 6 })].filter((e) => e.host !== 'gpu-node-000' && e.type === 'gpu.sample');
  return {
    bus,
    store,
    alerts,
    lines,
    later,
    publish,
    saved: async (host: string) => (await store.get(engineHostKey(host))) !== null,
    /**
     * Waits until the engine has judged and saved gpu-node-001's samples up to `at` (what was published
     * before them was judged too: one stream) and every alert on the topic reached `alerts`: a check that
     * nothing happened then looks at what did.
     */
    judgedUpTo: async (at: number) => {
      await until(async () => {
        const text = await store.get(engineHostKey('gpu-node-001'));
        return text !== null && ((JSON.parse(text) as { lastSample?: number }).lastSample ?? 0) >= at;
      });
      await until(async () => (await bus.read(TOPICS.alerts)).length === alerts.length);
    },
    indexed: async (host: string) => Object.hasOwn(await store.hashGetAll(enginePartitionKey(0)), host),
    async restart() {
      await engine.stop();
      engine = await start();
    },
    async close() {
      await engine.stop();
      await watch.stop();
      await bus.close();
    },
  };
}

const absentOf = (alerts: readonly EnvelopeOf<'alert'>[], host: string) =>
  alerts.filter((a) => a.host === host && a.data.rule === 'host-absent').map((a) => a.data.status);

describe('forgetting hosts', () => {
  it('a host unheard for longer than GPUALERT_FORGET_AFTER is forgotten: its alert resolved, its state gone, not loaded again', async () => {
    const p = await pipeline(DAY);
    // Ten minutes later the silent host is called down: what forgetting must end.
    await p.publish(p.later(T0 + 10 * 60_000));
    await until(() => absentOf(p.alerts, 'gpu-node-000').includes('firing'));
    expect(await p.saved('gpu-node-000')).toBe(true);
    expect(await p.indexed('gpu-node-000')).toBe(true);
    // Two days on, past the day it may be unheard.
    await p.publish(p.later(T0 + 2 * DAY));
    await until(() => absentOf(p.alerts, 'gpu-node-000').includes('resolved'));
    await until(() => p.lines.some((l) => l.msg === 'host_forgotten'));
    expect(await p.saved('gpu-node-000')).toBe(false);
    expect(await p.indexed('gpu-node-000')).toBe(false);
    expect(await p.saved('gpu-node-001')).toBe(true); // the others are not
    // After a reassignment (a restart) it is neither loaded nor judged: no new alert, logged once.
    await p.restart();
    await p.publish(p.later(T0 + 2 * DAY + 30 * 60_000));
    await p.judgedUpTo(T0 + 2 * DAY + 30 * 60_000);
    expect(await p.saved('gpu-node-000')).toBe(false);
    // Resolved once, and nothing after it (it was firing, then escalated, before).
    expect(absentOf(p.alerts, 'gpu-node-000').slice(-1)).toEqual(['resolved']);
    expect(absentOf(p.alerts, 'gpu-node-000').filter((s) => s === 'resolved')).toHaveLength(1);
    expect(p.lines.filter((l) => l.msg === 'host_forgotten').map((l) => l.host)).toEqual(['gpu-node-000']);
    await p.close();
  }, 30_000);

  it('a host still within GPUALERT_FORGET_AFTER is kept, and stays down', async () => {
    const p = await pipeline(7 * DAY);
    await p.publish(p.later(T0 + 10 * 60_000));
    await until(() => absentOf(p.alerts, 'gpu-node-000').includes('firing'));
    await p.publish(p.later(T0 + 2 * DAY));
    await p.judgedUpTo(T0 + 2 * DAY);
    expect(absentOf(p.alerts, 'gpu-node-000')).not.toContain('resolved');
    expect(absentOf(p.alerts, 'gpu-node-000')).toContain('firing');
    expect(await p.saved('gpu-node-000')).toBe(true);
    expect(p.lines.some((l) => l.msg === 'host_forgotten')).toBe(false);
    await p.close();
  }, 30_000);

  it('gpualert host forget: the stored state goes at once, the running engine drops the host and resolves its alert', async () => {
    const p = await pipeline(7 * DAY);
    await p.publish(p.later(T0 + 10 * 60_000));
    await until(() => absentOf(p.alerts, 'gpu-node-000').includes('firing'));
    expect(await requestHostForget(p.store, 'gpu-node-000', Date.now())).toEqual({ hadState: true });
    await until(() => absentOf(p.alerts, 'gpu-node-000').includes('resolved'));
    expect(await p.saved('gpu-node-000')).toBe(false);
    expect(await p.indexed('gpu-node-000')).toBe(false);
    expect(p.lines.find((l) => l.msg === 'host_forgotten')).toMatchObject({ host: 'gpu-node-000', reason: 'gpualert host forget' });
    // The request stays for the other engines (an hour), and is acted on once.
    expect((await p.store.sortedRange(FORGET_KEY, -Infinity, Infinity)).map((m) => m.member)).toEqual(['gpu-node-000']);
    await p.publish(p.later(T0 + 20 * 60_000));
    await p.judgedUpTo(T0 + 20 * 60_000);
    expect(p.lines.filter((l) => l.msg === 'host_forgotten')).toHaveLength(1);
    expect(await p.saved('gpu-node-000')).toBe(false);
    await p.close();
  }, 30_000);
});
