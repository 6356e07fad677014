import { DEADLETTER_HEADERS, envelopeMessage, MemoryBus } from '@gpualert/bus';
import { loadRuleSet } from '@gpualert/engine';
import { syntheticFleet } from '@gpualert/test-support';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore, MemoryStoreData } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { startEngineService } from './engine-service.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const log = createLogger({ name: 'test', level: 'silent' });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every alert the engines publish, as a watcher of the alerts topic sees them. */
async function watchAlerts(bus: MemoryBus) {
  await bus.ensureTopics(Object.values(TOPICS));
  const alerts: EnvelopeOf<'alert'>[] = [];
  const watch = await bus.consume({
    group: 'watch',
    topics: [TOPICS.alerts],
    handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
  });
  return { alerts, watch };
}

describe('engine service on the wall clock', () => {
  it('does not call a host down when its partition moved to another instance, and the new owner judges it', async () => {
    const bus = new MemoryBus({ partitions: 4 });
    const data = new MemoryStoreData();
    const { alerts, watch } = await watchAlerts(bus);
    const engine = (name: string) =>
      startEngineService({
        bus,
        store: new MemoryStore({ data }),
        log,
        ruleSet: rules.value,
        catalog: catalog.value,
        clock: 'wall',
        sessionTimeoutMs: 2_000,
        group: 'engines',
        tickMs: 200,
      });
    // Eight hosts scraped every 200 ms of wall time, published as their time comes.
    const start = Date.now();
    const fleet = [...syntheticFleet({ hosts: 8, gpusPerHost: 2, start, minutes: 1, intervalMs: 200, seed: 3 })];
    let publishing = true;
    const dead = new Set<string>();
    const publisher = (async () => {
      await bus.publish(TOPICS.hostInventory, fleet.filter((e) => e.type === 'host.inventory').map(envelopeMessage));
      const samples = fleet.filter((e) => e.type === 'gpu.sample');
      let next = 0;
      while (publishing && next < samples.length) {
        const due = [];
        while (next < samples.length && Date.parse(samples[next]!.ts) <= Date.now()) {
          const sample = samples[next++]!;
          if (!dead.has(sample.host)) due.push(envelopeMessage(sample));
        }
        if (due.length > 0) await bus.publish(TOPICS.gpuSamples, due);
        await pause(50);
      }
    })();
    const first = await engine('a');
    await pause(4_000); // the hosts' scrape interval is learned (200 ms: absent after 600 ms)
    const second = await engine('b'); // takes half the partitions, and with them half the hosts
    await pause(3_000);
    const down = alerts.filter((a) => a.data.rule === 'host-absent').map((a) => `${a.host} ${a.data.status}`);
    expect(down).toEqual([]);
    // Each owner does judge its hosts: those that stop reporting are called down, and only those.
    for (const host of ['gpu-node-000', 'gpu-node-001', 'gpu-node-002', 'gpu-node-003']) dead.add(host);
    const silent = () => new Set(alerts.filter((a) => a.data.rule === 'host-absent' && a.data.status === 'firing').map((a) => a.host));
    await waitFor(() => [...dead].every((host) => silent().has(host)), 'the silent hosts called down', 30_000);
    publishing = false;
    await publisher;
    expect([...silent()].sort()).toEqual([...dead].sort());
    await Promise.all([first.stop(), second.stop(), watch.stop()]);
    await bus.close();
  }, 60_000);

  it('does not call hosts down while it works through a backlog of their samples (after an outage or a restart)', async () => {
    // Small batches and a store 2 ms away: catching up takes many batches and several ticks.
    const bus = new MemoryBus({ partitions: 4, maxBatchSize: 5 });
    const store = new MemoryStore();
    const slow = new Proxy(store, {
      get: (target, name, receiver) => {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name !== 'get' || typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          await pause(2);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const { alerts, watch } = await watchAlerts(bus);
    // Eight hosts scraped every 200 ms: the last 20 s already waiting on the bus, the rest as it comes.
    const fleet = [...syntheticFleet({ hosts: 8, gpusPerHost: 2, start: Date.now() - 20_000, minutes: 1, intervalMs: 200, seed: 5 })];
    await bus.publish(TOPICS.hostInventory, fleet.filter((e) => e.type === 'host.inventory').map(envelopeMessage));
    const samples = fleet.filter((e) => e.type === 'gpu.sample');
    let next = 0;
    const publishDue = async () => {
      const due = [];
      while (next < samples.length && Date.parse(samples[next]!.ts) <= Date.now()) due.push(envelopeMessage(samples[next++]!));
      if (due.length > 0) await bus.publish(TOPICS.gpuSamples, due);
    };
    await publishDue();
    const live = setInterval(() => void publishDue(), 50);
    let ticks = 0;
    const service = await startEngineService({
      bus,
      store: slow,
      log,
      ruleSet: rules.value,
      catalog: catalog.value,
      clock: 'wall',
      group: 'engine',
      tickMs: 20,
      onTick: () => void (ticks += 1),
    });
    await pause(1_500);
    // Ticks while it catches up, however slow the machine: each could call a host down.
    await waitFor(() => ticks > 10, 'ticks during the catch-up', 30_000);
    clearInterval(live);
    expect(alerts.filter((a) => a.data.rule === 'host-absent').map((a) => `${a.host} ${a.data.status}`)).toEqual([]);
    await Promise.all([service.stop(), watch.stop()]);
    await bus.close();
  }, 60_000);

  it('a tick whose alert cannot be published is undone: its hosts are read again from the store, and the silent host is called down once the bus is back, once', async () => {
    /** The bus, failing every publish to the alerts topic while `failing` (Kafka away). */
    class FailingBus extends MemoryBus {
      failing = false;
      failed = 0;
      override async publish(...args: Parameters<MemoryBus['publish']>): ReturnType<MemoryBus['publish']> {
        if (this.failing && args[0] === TOPICS.alerts) {
          this.failed += 1;
          throw new Error('the bus went away');
        }
        return super.publish(...args);
      }
    }
    const bus = new FailingBus({ partitions: 2 });
    const { alerts, watch } = await watchAlerts(bus);
    const fleet = [...syntheticFleet({ hosts: 4, gpusPerHost: 1, start: Date.now(), minutes: 1, intervalMs: 200, seed: 9 })];
    await bus.publish(TOPICS.hostInventory, fleet.filter((e) => e.type === 'host.inventory').map(envelopeMessage));
    const samples = fleet.filter((e) => e.type === 'gpu.sample');
    const dead = new Set<string>();
    let next = 0;
    const live = setInterval(() => {
      const due = [];
      while (next < samples.length && Date.parse(samples[next]!.ts) <= Date.now()) {
        const sample = samples[next++]!;
        if (!dead.has(sample.host)) due.push(envelopeMessage(sample));
      }
      if (due.length > 0) void bus.publish(TOPICS.gpuSamples, due);
    }, 50);
    const service = await startEngineService({
      bus,
      store: new MemoryStore(),
      log,
      ruleSet: rules.value,
      catalog: catalog.value,
      clock: 'wall',
      group: 'engine',
      tickMs: 100,
    });
    await pause(3_000); // the scrape interval is learned
    bus.failing = true;
    dead.add('gpu-node-002');
    // The tick that calls it down fails (its alert is not published): the tick is undone, and keeps failing while the bus is away.
    await waitFor(() => bus.failed >= 3, 'ticks failing to publish', 20_000);
    expect(alerts.filter((a) => a.data.rule === 'host-absent')).toEqual([]);
    bus.failing = false;
    const down = () => alerts.filter((a) => a.data.rule === 'host-absent' && a.data.status === 'firing').map((a) => a.host);
    await waitFor(() => down().length > 0, 'the silent host called down once the bus is back', 20_000);
    await pause(1_000);
    clearInterval(live);
    expect(down()).toEqual(['gpu-node-002']);
    await Promise.all([service.stop(), watch.stop()]);
    await bus.close();
  }, 60_000);

  it('calls down a host that went silent while no engine ran, once one starts again', async () => {
    const bus = new MemoryBus({ partitions: 4 });
    const data = new MemoryStoreData();
    const { alerts, watch } = await watchAlerts(bus);
    const engine = () =>
      startEngineService({
        bus,
        store: new MemoryStore({ data }),
        log,
        ruleSet: rules.value,
        catalog: catalog.value,
        clock: 'wall',
        group: 'engine',
        tickMs: 100,
      });
    const fleet = [...syntheticFleet({ hosts: 6, gpusPerHost: 2, start: Date.now(), minutes: 1, intervalMs: 200, seed: 9 })];
    await bus.publish(TOPICS.hostInventory, fleet.filter((e) => e.type === 'host.inventory').map(envelopeMessage));
    const samples = fleet.filter((e) => e.type === 'gpu.sample');
    let next = 0;
    let dead = '';
    const publishDue = async () => {
      const due = [];
      while (next < samples.length && Date.parse(samples[next]!.ts) <= Date.now()) {
        const sample = samples[next++]!;
        if (sample.host !== dead) due.push(envelopeMessage(sample));
      }
      if (due.length > 0) await bus.publish(TOPICS.gpuSamples, due);
    };
    const live = setInterval(() => void publishDue(), 50);
    let service = await engine();
    await pause(3_000);
    await service.stop();
    dead = 'gpu-node-004'; // dies while no engine runs
    await pause(1_500);
    service = await engine();
    const down = () => alerts.filter((a) => a.data.rule === 'host-absent' && a.data.status === 'firing').map((a) => a.host);
    await waitFor(() => down().includes('gpu-node-004'), 'gpu-node-004 called down', 30_000);
    clearInterval(live);
    expect(down()).toEqual(['gpu-node-004']);
    await Promise.all([service.stop(), watch.stop()]);
    await bus.close();
  }, 60_000);
});

describe('engine service: a big tick', () => {
  it('judges a fault that comes while a tick calls 1,500 silent hosts down before the tick ends, and calls each silent host down once', async () => {
    const bus = new MemoryBus({ partitions: 2 });
    await bus.ensureTopics(Object.values(TOPICS));
    // 1,501 hosts reported every 500 ms until 5 s ago; one of them, the live host, still does.
    const now = Date.now();
    const live = 'gpu-node-000';
    const history: EnvelopeOf<'gpu.sample'>[] = [];
    const inventories = [];
    const liveSamples: EnvelopeOf<'gpu.sample'>[] = [];
    for (const envelope of syntheticFleet({ hosts: 1_501, gpusPerHost: 1, start: now - 8_000, minutes: 1, intervalMs: 500, seed: 6 })) {
      if (envelope.type === 'host.inventory') inventories.push(envelope);
      else if (envelope.type !== 'gpu.sample') continue;
      else if (Date.parse(envelope.ts) <= now - 5_000) history.push(envelope);
      else if (envelope.host === live) liveSamples.push(envelope);
      else if (Date.parse(envelope.ts) > now + 30_000) break;
    }
    await bus.publish(TOPICS.hostInventory, inventories.map(envelopeMessage));
    await bus.publish(TOPICS.gpuSamples, history.map(envelopeMessage));
    const publishLive = setInterval(() => {
      const due = [];
      while (liveSamples.length > 0 && Date.parse(liveSamples[0]!.ts) <= Date.now()) due.push(envelopeMessage(liveSamples.shift()!));
      if (due.length > 0) void bus.publish(TOPICS.gpuSamples, due);
    }, 50);
    // Turns of the event loop (what answers probes and fetches) counted from a tick's start (it
    // takes the operators' resolves first) to its end, when asked for.
    let measure = false;
    let started = false;
    let turns = 0;
    let turnsInTick: number | undefined;
    const store = new MemoryStore();
    const watched = new Proxy(store, {
      get: (target, name, receiver) => {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name !== 'sortedRange' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (measure && !started) {
            started = true;
            const spin = () => {
              turns += 1;
              if (turnsInTick === undefined) setImmediate(spin);
            };
            setImmediate(spin);
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const service = await startEngineService({
      bus,
      store: watched,
      log,
      ruleSet: rules.value,
      catalog: catalog.value,
      clock: 'wall',
      group: 'engine',
      tickMs: 100,
      tickSliceMs: 1,
      onTick: () => {
        if (started && turnsInTick === undefined) turnsInTick = turns;
      },
    });
    // The live host's GPU falls off the bus as soon as the first silent host is called down.
    const alerts: EnvelopeOf<'alert'>[] = [];
    const down = () => alerts.filter((a) => a.data.rule === 'host-absent' && a.data.status === 'firing');
    const watch = await bus.consume({
      group: 'watch',
      topics: [TOPICS.alerts],
      handler: async (b) => {
        const first = down().length === 0;
        alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : [])));
        if (first && down().length > 0) await bus.publish(TOPICS.kernelEvents, [envelopeMessage(xid79(live, Date.now()))]);
      },
    });
    await waitFor(
      () => down().length >= 1_500 && alerts.some((a) => a.host === live && a.data.severity === 'critical'),
      'every silent host down, and the page',
      30_000,
    );
    clearInterval(publishLive);
    const page = alerts.findIndex((a) => a.host === live && a.data.severity === 'critical');
    const lastDown = alerts.lastIndexOf(down().at(-1)!);
    expect(page, `the page is alert ${page}, the last host down alert ${lastDown}`).toBeLessThan(lastDown);
    const hosts = down().map((a) => a.host);
    expect(new Set(hosts).size).toBe(hosts.length);
    expect(hosts).not.toContain(live);
    // A tick with nothing to publish (every silent host already down) does no I/O of its own: the
    // event loop still turns between its slices, so a probe or a fetched fault is not held for it.
    measure = true;
    await waitFor(() => turnsInTick !== undefined, 'a tick measured');
    expect(turnsInTick, 'turns of the event loop during one tick').toBeGreaterThan(3);
    await Promise.all([service.stop(), watch.stop()]);
    await bus.close();
  }, 60_000);
});

/** Polls until `check` holds, or fails naming what it waited for. */
async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(50);
  }
}

/** An Xid 79 on a host with no inventory: the GPU fell off the bus, a critical page. */
const xid79 = (host: string, at: number) =>
  newEnvelope({
    type: 'kernel.event',
    host,
    source: 'test',
    ts: new Date(at).toISOString(),
    data: { kind: 'xid', xid: 79, pci_bus: '0000:3b:00', message: 'NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.', severity: 'critical' },
  });

describe('engine service on hostile input', () => {
  it('judges hosts named constructor, __proto__ and toString, and the hosts after them on the same partition still page (the batch threw on every retry)', async () => {
    const bus = new MemoryBus({ partitions: 1 });
    const { alerts, watch } = await watchAlerts(bus);
    const store = new MemoryStore();
    const service = await startEngineService({ bus, store, log, ruleSet: rules.value, catalog: catalog.value, clock: 'event', group: 'engine' });
    const now = Date.now();
    const hosts = ['constructor', '__proto__', 'toString', 'gpu-node-after'];
    await bus.publish(
      TOPICS.kernelEvents,
      hosts.map((host, i) => envelopeMessage(xid79(host, now + i))),
    );
    await waitFor(() => new Set(alerts.filter((a) => a.data.severity === 'critical').map((a) => a.host)).size === hosts.length, 'a page for every host');
    // And again after a restart, from what the store holds.
    await service.stop();
    const again = await startEngineService({ bus, store, log, ruleSet: rules.value, catalog: catalog.value, clock: 'event', group: 'engine' });
    await bus.publish(TOPICS.kernelEvents, [envelopeMessage(xid79('gpu-node-later', now + 10))]);
    await waitFor(() => alerts.some((a) => a.host === 'gpu-node-later'), 'a page after the restart');
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('gpu-node-after');
    await Promise.all([again.stop(), watch.stop()]);
    await bus.close();
  }, 30_000);

  it('dead-letters a sample dated in year 9999 with that reason, and still calls its host down when it goes silent', async () => {
    const bus = new MemoryBus({ partitions: 1 });
    const { alerts, watch } = await watchAlerts(bus);
    const service = await startEngineService({
      bus,
      store: new MemoryStore(),
      log,
      ruleSet: rules.value,
      catalog: catalog.value,
      clock: 'wall',
      group: 'engine',
      tickMs: 100,
    });
    const fleet = [...syntheticFleet({ hosts: 2, gpusPerHost: 2, start: Date.now(), minutes: 1, intervalMs: 200, seed: 4 })];
    await bus.publish(TOPICS.hostInventory, fleet.filter((e) => e.type === 'host.inventory').map(envelopeMessage));
    const samples = fleet.filter((e) => e.type === 'gpu.sample');
    const future = { ...samples[0]!, id: 'from-the-future', ts: '9999-12-31T23:59:59.000Z' };
    let next = 0;
    let silent = '';
    const publishDue = async () => {
      const due = [];
      while (next < samples.length && Date.parse(samples[next]!.ts) <= Date.now()) {
        const sample = samples[next++]!;
        if (sample.host !== silent) due.push(envelopeMessage(sample));
        if (next === 10) due.push(envelopeMessage(future));
      }
      if (due.length > 0) await bus.publish(TOPICS.gpuSamples, due);
    };
    const live = setInterval(() => void publishDue(), 50);
    await pause(3_000);
    silent = future.host;
    // Judged, the sample paged for the host at once (silent since year 9999) and then hid it for good.
    await waitFor(
      () => alerts.some((a) => a.host === silent && a.data.rule === 'host-absent' && a.data.status === 'firing' && Date.parse(a.ts) <= Date.now()),
      `${silent} called down`,
    );
    clearInterval(live);
    expect(alerts.filter((a) => a.ts.startsWith('9999'))).toEqual([]);
    const dead = await bus.read(TOPICS.deadletter);
    expect(dead.map((m) => [JSON.parse(m.value.toString()).id, m.headers[DEADLETTER_HEADERS.reason]])).toEqual([
      [
        'from-the-future',
        expect.stringMatching(/^ts: expected at most 5 min after receipt \(.*\), got 9999-12-31T23:59:59.000Z: the source's clock is ahead$/),
      ],
    ]);
    await Promise.all([service.stop(), watch.stop()]);
    await bus.close();
  }, 30_000);
});
