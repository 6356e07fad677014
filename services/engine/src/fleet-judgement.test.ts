import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { Engine, ENGINE_FLEET_KEY, ENGINE_FLEET_SHARES_KEY, loadRuleSet, replay } from '@gpualert/engine';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, TOPICS, type Envelope, type EnvelopeOf, type GpuMetrics } from '@gpualert/schema';
import { MemoryStore, MemoryStoreData } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { startEngineService } from './engine-service.ts';
import { hostsOn, inventory, PARTITIONS, T0, waitFor } from '@gpualert/test-support';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const log = createLogger({ name: 'test', level: 'silent' });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MIN = 60_000;

/*
 * Hosts named so that a straggler and a drifting host sit on even partitions and most of their
 * peers on odd ones (`hostsOn`). The in-process bus gives two members of a group the even and the
 * odd partitions, so neither engine alone holds enough of the job or the cluster to judge it.
 */

function gpu(index: number, util: number): GpuMetrics {
  return {
    index,
    uuid: null,
    pci_bus: null,
    name: 'NVIDIA H100',
    util_pct: util,
    mem_util_pct: 40,
    mem_used_mib: 60_000,
    mem_total_mib: 81_559,
    temp_c: 60,
    mem_temp_c: 66,
    power_w: 640,
    power_limit_w: 700,
    sm_clock_mhz: 1980,
    mem_clock_mhz: 2619,
    fan_pct: null,
    pcie_gen: 5,
    pcie_gen_max: 5,
    pcie_width: 16,
    pcie_width_max: 16,
    ecc_sbe_volatile: 0,
    ecc_dbe_volatile: 0,
    ecc_sbe_aggregate: 0,
    ecc_dbe_aggregate: 0,
    remap_pending: false,
    remap_failure: false,
    throttle: [],
    xid_last: null,
    nvlink_errors: 0,
    processes: 1,
  };
}

/** Fourteen minutes of a job's host: two GPUs at `util` %, every 30 s. */
const samples = (host: string, util: number): Envelope[] =>
  Array.from({ length: 29 }, (_, i) =>
    newEnvelope({
      type: 'gpu.sample',
      id: `s-${host}-${i}`,
      host,
      source: 'test',
      ts: new Date(T0 + i * 30_000).toISOString(),
      labels: { job: 'llm-pretrain' },
      data: { gpus: [gpu(0, util), gpu(1, util)] },
    }),
  );

describe('fleet-wide judgement with two engines', () => {
  it('catches a straggler whose peers the other engine owns and a drift against a majority spread over both, each once', async () => {
    const bus = new MemoryBus({ partitions: PARTITIONS });
    await bus.ensureTopics(Object.values(TOPICS));
    const data = new MemoryStoreData();
    const alerts: EnvelopeOf<'alert'>[] = [];
    const watch = await bus.consume({
      group: 'watch',
      topics: [TOPICS.alerts],
      handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
    });
    // Ticks counted per engine: "no second copy" is checked after both have ticked, however slow the machine.
    const ticks = [0, 0];
    const engine = (i: number) =>
      startEngineService({
        bus,
        store: new MemoryStore({ data }),
        log,
        ruleSet: rules.value,
        catalog: catalog.value,
        clock: 'event',
        group: 'engines',
        tickMs: 50,
        onTick: () => {
          ticks[i]! += 1;
        },
      });
    const engines = [await engine(0), await engine(1)];

    const [straggler] = hostsOn(0, 1, 'train');
    const peers = hostsOn(1, 2, 'train');
    const [drifting, evenPeer] = hostsOn(0, 2, 'east');
    const oddPeers = hostsOn(1, 3, 'east');
    // The cluster first: four hosts on one driver (one with the drifting host, three on the other engine).
    await bus.publish(
      TOPICS.hostInventory,
      [...oddPeers, evenPeer!].map((h) => envelopeMessage(inventory(h, '550.54.15'))),
    );
    await bus.publish(TOPICS.hostInventory, [envelopeMessage(inventory(drifting!, '535.161.08'))]);
    // The job's busy hosts, then (once they are shared) its slow one.
    await bus.publish(TOPICS.gpuSamples, peers.flatMap((h) => samples(h, 97)).map(envelopeMessage));
    const shared = async () => Object.keys(await new MemoryStore({ data }).hashGetAll(ENGINE_FLEET_SHARES_KEY));
    await waitFor(async () => {
      const s = await shared();
      return peers.every((h) => s.includes(h));
    }, "the peers' shares");
    // As a live host's would, its samples come over time: a few of the engines' ticks (50 ms) apart.
    for (const sample of samples(straggler!, 20)) {
      await bus.publish(TOPICS.gpuSamples, [envelopeMessage(sample)]);
      await pause(20);
    }

    const firing = () => alerts.filter((a) => a.data.status === 'firing');
    await waitFor(
      () => firing().some((a) => a.data.rule === 'job-straggler') && firing().some((a) => a.data.rule === 'version-drift'),
      'the straggler and the drift alerts',
    );
    const seen = [...ticks];
    await waitFor(() => ticks.every((t, i) => t >= seen[i]! + 5), 'five ticks of each engine'); // five ticks of each engine: a second copy of either alert would be out by now
    expect(firing().map((a) => [a.host, a.data.rule])).toEqual(
      expect.arrayContaining([
        [straggler, 'job-straggler'],
        [drifting, 'version-drift'],
      ]),
    );
    expect(firing().filter((a) => a.data.rule === 'job-straggler' || a.data.rule === 'version-drift').length).toBe(2);
    expect(firing().find((a) => a.data.rule === 'version-drift')!.data.summary).toMatch(/4 of 5 hosts in east run 550\.54\.15/);
    await Promise.all([...engines.map((e) => e.stop()), watch.stop()]);
    await bus.close();
  }, 30_000);
});

describe('cluster-majority drift with one engine', () => {
  it('catches a host whose inventory came before its cluster had a majority, as replay does', async () => {
    const bus = new MemoryBus({ partitions: PARTITIONS });
    await bus.ensureTopics(Object.values(TOPICS));
    const alerts: EnvelopeOf<'alert'>[] = [];
    const watch = await bus.consume({
      group: 'watch',
      topics: [TOPICS.alerts],
      handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
    });
    const store = new MemoryStore();
    let ticks = 0;
    const service = await startEngineService({
      bus,
      store,
      log,
      ruleSet: rules.value,
      catalog: catalog.value,
      clock: 'event',
      tickMs: 50,
      onTick: () => {
        ticks += 1;
      },
    });
    await bus.publish(TOPICS.hostInventory, [envelopeMessage(inventory('east-first', '535.161.08'))]);
    await waitFor(async () => Object.hasOwn(await store.hashGetAll(ENGINE_FLEET_SHARES_KEY), 'east-first'), "east-first's share");
    const seen = ticks;
    await waitFor(() => ticks >= seen + 4, 'four engine ticks'); // judged, and a few ticks on: one host of one, no majority yet
    expect(alerts).toEqual([]);
    await bus.publish(
      TOPICS.hostInventory,
      ['east-a', 'east-b', 'east-c'].map((h) => envelopeMessage(inventory(h, '550.54.15'))),
    );
    await waitFor(() => alerts.some((a) => a.data.rule === 'version-drift'), 'the drift alert');
    expect(alerts.map((a) => [a.host, a.data.rule, a.data.status])).toEqual([['east-first', 'version-drift', 'firing']]);
    // `gpualert replay` of the same inventories says the same.
    const lines = [inventory('east-first', '535.161.08'), ...['east-a', 'east-b', 'east-c'].map((h) => inventory(h, '550.54.15'))].map((e) =>
      JSON.stringify(e),
    );
    expect(replay(new Engine(rules.value, catalog.value), lines).map((a) => [a.host, a.data.rule, a.data.status])).toEqual([
      ['east-first', 'version-drift', 'firing'],
    ]);
    await Promise.all([service.stop(), watch.stop()]);
    await bus.close();
  }, 30_000);
});

describe('training jobs in the store', () => {
  it("holds a job's fatal GPU fault once the batch that judged it is done, not only at the next tick", async () => {
    const bus = new MemoryBus({ partitions: 1 });
    await bus.ensureTopics(Object.values(TOPICS));
    const store = new MemoryStore();
    const alerts: EnvelopeOf<'alert'>[] = [];
    const watch = await bus.consume({
      group: 'watch',
      topics: [TOPICS.alerts],
      handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
    });
    // No tick in the test's time: only the batches save.
    const service = await startEngineService({ bus, store, log, ruleSet: rules.value, catalog: catalog.value, clock: 'event', tickMs: 600_000 });
    const at = (s: number) => new Date(T0 + s * 1_000).toISOString();
    await bus.publish(TOPICS.gpuSamples, [
      envelopeMessage(
        newEnvelope({
          type: 'gpu.sample',
          id: 's-1',
          host: 'train-node',
          source: 'test',
          ts: at(0),
          data: { gpus: [{ ...gpu(0, 97), pci_bus: '0000:4b:00', job: { job: 'llm-1' } }] },
        }),
      ),
    ]);
    await bus.publish(TOPICS.jobEvents, [
      envelopeMessage(
        newEnvelope({
          type: 'job.event',
          id: 'j-1',
          host: 'train-node',
          source: 'test',
          ts: at(1),
          data: { job: 'llm-1', kind: 'step', rank: 0, gpu: 0, step: 100, message: 'iteration 100' },
        }),
      ),
    ]);
    await waitFor(async () => (await store.get(ENGINE_FLEET_KEY)) !== null, 'the training document');
    await bus.publish(TOPICS.kernelEvents, [
      envelopeMessage(
        newEnvelope({
          type: 'kernel.event',
          id: 'x-1',
          host: 'train-node',
          source: 'test',
          ts: at(2),
          data: {
            kind: 'xid',
            xid: 79,
            pci_bus: '0000:4b:00',
            severity: 'critical',
            message: 'NVRM: Xid (PCI:0000:4b:00): 79, GPU has fallen off the bus.',
            count: 1,
          },
        }),
      ),
    ]);
    await waitFor(() => alerts.some((a) => a.data.rule === 'job-gpu-fault'), 'the job fault alert');
    await service.stop(); // what a crash right after the batch leaves
    const saved = JSON.parse((await store.get(ENGINE_FLEET_KEY))!) as { training: Record<string, { fault?: { gpu: number } }> };
    expect(saved.training['llm-1']?.fault).toMatchObject({ gpu: 0 });
    await watch.stop();
    await bus.close();
  }, 30_000);
});
