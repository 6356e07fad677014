import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { dict, emptyEngineState, Engine, ENGINE_FLEET_KEY, ENGINE_FLEET_SHARES_KEY, loadRuleSet, newHostState } from '@gpualert/engine';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { MAX_SHARED_HOSTS, newEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore, MemoryStoreData } from '@gpualert/state';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ENGINE_INPUT_TOPICS, startEngineService } from './engine-service.ts';
import { FleetShares } from './fleet-sharing.ts';
import { hostsOn, inventory, PARTITIONS, T0, waitFor } from '@gpualert/test-support';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const log = createLogger({ name: 'test', level: 'silent' });
describe("a rebalance keeps an engine's own hosts in its clusters", () => {
  it('does not resolve a still-drifting host after its engine is given a new assignment', async () => {
    const bus = new MemoryBus({ partitions: PARTITIONS });
    await bus.ensureTopics(Object.values(TOPICS));
    const data = new MemoryStoreData();
    const alerts: EnvelopeOf<'alert'>[] = [];
    const watch = await bus.consume({
      group: 'watch',
      topics: [TOPICS.alerts],
      handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
    });
    let ticks = 0;
    const engine = await startEngineService({
      bus,
      store: new MemoryStore({ data }),
      log,
      ruleSet: rules.value,
      catalog: catalog.value,
      clock: 'event',
      group: 'engines',
      tickMs: 50,
      onTick: () => {
        ticks += 1;
      },
    });
    const ticksPass = async (n: number) => {
      const from = ticks;
      await waitFor(() => ticks >= from + n, `${n} engine ticks`);
    };
    // Every host on the partitions this engine keeps (the first member keeps the even ones).
    const [drifting, ...peers] = hostsOn(0, 5, 'east');
    await bus.publish(
      TOPICS.hostInventory,
      peers.map((h) => envelopeMessage(inventory(h, '550.54.15'))),
    );
    await bus.publish(TOPICS.hostInventory, [envelopeMessage(inventory(drifting!, '535.161.08'))]);
    await waitFor(() => alerts.some((a) => a.host === drifting && a.data.rule === 'version-drift' && a.data.status === 'firing'), 'the drift alert');

    // A second member joins the group (a new engine, a restart elsewhere): a new assignment, same hosts kept here.
    const other = await bus.consume({ group: 'engines', topics: [...ENGINE_INPUT_TOPICS], handler: async () => {} });
    await ticksPass(6); // the assignment's reload and a few ticks
    // The drifting host reports again, still on the old driver.
    await bus.publish(TOPICS.hostInventory, [envelopeMessage(inventory(drifting!, '535.161.08', T0 + 600_000, `i-${drifting}-again`))]);
    const store = new MemoryStore({ data });
    // Judged: its saved state holds the second inventory's time.
    await waitFor(
      async () => (JSON.parse((await store.get(`engine:host:${drifting}`)) ?? '{}') as { inventory?: { at?: number } }).inventory?.at === T0 + 600_000,
      'the second inventory judged',
    );
    await ticksPass(8); // a wrong resolve would come at one of these ticks
    expect(alerts.filter((a) => a.host === drifting && a.data.rule === 'version-drift').map((a) => a.data.status)).toEqual(['firing']);
    await Promise.all([engine.stop(), other.stop(), watch.stop()]);
    await bus.close();
  }, 30_000);
});

describe('the training document comes back after the store loses it', () => {
  it('writes engine:fleet again once the store lost its data (FLUSHALL)', async () => {
    const store = new MemoryStore({ data: new MemoryStoreData() });
    const state = emptyEngineState();
    state.fleet.training = dict();
    state.fleet.training['job-1'] = { labels: dict(), heard: T0, home: 'h', ranks: dict() };
    state.hosts.h = newHostState('h', { job: 'job-1' }, 'default');
    state.fleet.jobs['job-1'] = dict();
    state.fleet.jobs['job-1'].h = { util: 90, at: T0 };
    const shares = new FleetShares(store, new Engine(rules.value, catalog.value), state);
    await shares.saveTraining();
    shares.touched(['h']);
    await shares.flush();
    await store.delete(ENGINE_FLEET_KEY, ENGINE_FLEET_SHARES_KEY); // what FLUSHALL does to these two
    await shares.saveTraining(); // unchanged in memory: not written
    expect(await store.get(ENGINE_FLEET_KEY)).toBeNull();
    await shares.refresh(); // the next tick sees its share gone: the store lost its data
    await shares.flush();
    await shares.saveTraining();
    expect(await store.get(ENGINE_FLEET_KEY)).not.toBeNull();
    expect(Object.keys(await store.hashGetAll(ENGINE_FLEET_SHARES_KEY))).toEqual(['h']);
  });
});

describe('the store wiped (FLUSHALL) under two engines', () => {
  it("does not resolve a drift because the other engine's shares are gone for a tick", async () => {
    const data = new MemoryStoreData();
    const engine = new Engine(rules.value, catalog.value);
    const inv = (host: string, driver: string) =>
      newEnvelope({
        type: 'host.inventory',
        host,
        source: 't',
        ts: new Date(T0).toISOString(),
        labels: { cluster: 'east' },
        data: { gpu_model: 'NVIDIA H100', gpu_count: 0, driver_version: driver, cuda_version: '12.4', gpus: [] },
      });
    // Engine A owns the drifting host and one peer; engine B owns three peers.
    const a = emptyEngineState();
    const b = emptyEngineState();
    const alertsA: EnvelopeOf<'alert'>[] = [];
    alertsA.push(...engine.step(a, inv('east-drifting', '535.161.08')), ...engine.step(a, inv('east-p0', '550.54.15')));
    for (const h of ['east-p1', 'east-p2', 'east-p3']) engine.step(b, inv(h, '550.54.15'));
    const sharesA = new FleetShares(new MemoryStore({ data }), engine, a);
    const sharesB = new FleetShares(new MemoryStore({ data }), new Engine(rules.value, catalog.value), b);
    sharesA.touched(Object.keys(a.hosts));
    sharesB.touched(Object.keys(b.hosts));
    const tick = async () => {
      for (const s of [sharesA, sharesB]) await s.flush();
      alertsA.push(...(await sharesA.refresh()).alerts);
      await sharesB.refresh();
    };
    await tick();
    await tick();
    const drift = () => alertsA.filter((x) => x.host === 'east-drifting' && x.data.rule === 'version-drift').map((x) => x.data.status);
    expect(drift()).toEqual(['firing']);
    await new MemoryStore({ data }).delete(ENGINE_FLEET_SHARES_KEY); // FLUSHALL
    for (let i = 0; i < 4; i += 1) await tick();
    // Nothing about the hosts changed: the alert stays as it was.
    expect(drift()).toEqual(['firing']);
  });
});

/** A logger whose lines a test reads back. */
function capturedLog() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger({ name: 'test', level: 'info', destination }), skippedLines: () => lines.filter((l) => l.msg === 'engine_fleet_shares_skipped') };
}

describe('shares the store should not hold', () => {
  const now = Date.parse('2026-12-01T06:00:00Z');
  const peer = (util: number, at = now) => JSON.stringify({ job: { name: 'j', util, at }, cluster: { name: 'east', driver: '550', cuda: '12.4' } });

  it('leaves out what is out of range or dated ahead, keeps ticking, and says so once while it lasts (a flapping share included)', async () => {
    const store = new MemoryStore({ data: new MemoryStoreData() });
    const { log, skippedLines } = capturedLog();
    const state = emptyEngineState();
    const shares = new FleetShares(store, new Engine(rules.value, catalog.value), state, { log, now: () => now });
    await store.hashSet(ENGINE_FLEET_SHARES_KEY, { ok: peer(90), hot: peer(1e9), ahead: peer(90, now + 365 * 86_400_000) });
    for (let i = 0; i < 3; i += 1) await shares.refresh();
    expect(Object.keys(state.fleet.jobs.j!)).toEqual(['ok']);
    expect(Object.keys(state.fleet.clusters.east!)).toEqual(['ok']);
    expect(skippedLines()).toHaveLength(1);
    expect(skippedLines()[0]).toMatchObject({ level: 40, key: ENGINE_FLEET_SHARES_KEY, skipped: 2, beyond: 0, refused: 2, max_hosts: MAX_SHARED_HOSTS });
    // Written again as they should be: read in, and no line; a share flipping back and forth each tick: still no line.
    for (let i = 0; i < 10; i += 1) {
      await store.hashSet(ENGINE_FLEET_SHARES_KEY, { hot: peer(95), ahead: peer(96) });
      await shares.refresh();
      expect(Object.keys(state.fleet.jobs.j!).sort()).toEqual(['ahead', 'hot', 'ok']);
      await store.hashSet(ENGINE_FLEET_SHARES_KEY, { hot: peer(1e9) });
      await shares.refresh();
    }
    expect(skippedLines()).toHaveLength(1);
    // Clean for a minute of refreshes, then wrong again: a line again.
    await store.hashSet(ENGINE_FLEET_SHARES_KEY, { hot: peer(95) });
    for (let i = 0; i < 30; i += 1) await shares.refresh();
    expect(skippedLines()).toHaveLength(1);
    await store.hashSet(ENGINE_FLEET_SHARES_KEY, { hot: '{"job":{"name":"j","util":-3,"at":0}}' });
    await shares.refresh();
    await shares.refresh();
    expect(Object.keys(state.fleet.jobs.j!).sort()).toEqual(['ahead', 'ok']);
    expect(skippedLines()).toHaveLength(2);
    expect(skippedLines()[1]).toMatchObject({ skipped: 1, refused: 1 });
  });

  it("says so in the engine service's own log", async () => {
    const bus = new MemoryBus({ partitions: PARTITIONS });
    await bus.ensureTopics(Object.values(TOPICS));
    const store = new MemoryStore({ data: new MemoryStoreData() });
    await store.hashSet(ENGINE_FLEET_SHARES_KEY, { ok: peer(90), hot: peer(1e9) });
    const { log, skippedLines } = capturedLog();
    const service = await startEngineService({ bus, store, log, ruleSet: rules.value, catalog: catalog.value, clock: 'wall', tickMs: 600_000 });
    await waitFor(() => skippedLines().length > 0, 'the skipped-shares line'); // its first refresh, at start
    expect(skippedLines()[0]).toMatchObject({ key: ENGINE_FLEET_SHARES_KEY, skipped: 1, refused: 1 });
    await service.stop();
    await bus.close();
  }, 30_000);

  it(`reads no more than ${MAX_SHARED_HOSTS.toLocaleString('en-US')} shares, and says how many it left out`, async () => {
    const store = new MemoryStore({ data: new MemoryStoreData() });
    const { log, skippedLines } = capturedLog();
    const state = emptyEngineState();
    const shares = new FleetShares(store, new Engine(rules.value, catalog.value), state, { log, now: () => now });
    const fields = dict<string>();
    for (let i = 0; i < MAX_SHARED_HOSTS + 7; i += 1) fields[`east-${i}`] = peer(90);
    await store.hashSet(ENGINE_FLEET_SHARES_KEY, fields);
    await shares.refresh();
    await shares.refresh();
    expect(Object.keys(state.fleet.clusters.east!)).toHaveLength(MAX_SHARED_HOSTS);
    expect(skippedLines()).toHaveLength(1);
    expect(skippedLines()[0]).toMatchObject({ key: ENGINE_FLEET_SHARES_KEY, skipped: 7, beyond: 7, refused: 0, max_hosts: MAX_SHARED_HOSTS });
  }, 30_000);

  it('reads a hash past its read bound only in part, and counts what it did not read as left out', async () => {
    const store = new MemoryStore({ data: new MemoryStoreData() });
    const { log, skippedLines } = capturedLog();
    const state = emptyEngineState();
    const shares = new FleetShares(store, new Engine(rules.value, catalog.value), state, { log, now: () => now });
    const fields = dict<string>();
    for (let i = 0; i < 2 * MAX_SHARED_HOSTS; i += 1) fields[`junk-${i}`] = 'x';
    await store.hashSet(ENGINE_FLEET_SHARES_KEY, fields);
    await store.hashSet(ENGINE_FLEET_SHARES_KEY, { 'east-late': peer(90) }); // past what one tick reads
    await shares.refresh();
    expect(skippedLines()).toHaveLength(1);
    expect(skippedLines()[0]).toMatchObject({ beyond: 1, refused: 2 * MAX_SHARED_HOSTS });
    expect(state.fleet.clusters.east).toBeUndefined();
  }, 60_000);
});
