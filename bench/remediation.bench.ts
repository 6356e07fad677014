import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { FileLineSource, startKernelCollector } from '@gpualert/collectors';
import { loadRuleSet } from '@gpualert/engine';
import { startEngineService } from '@gpualert/engine-service';
import { SlurmExecutor } from '@gpualert/executors';
import { createLogger } from '@gpualert/log';
import { parsePolicy, RemediationCore } from '@gpualert/remediation';
import { REMEDIATOR_SOURCE, startRemediator } from '@gpualert/remediator';
import { loadXidCatalog } from '@gpualert/rules';
import { ALL_TOPICS, TOPICS, type Envelope } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { syntheticFleet } from '@gpualert/test-support';
import { SlurmCluster } from '../test/infra/slurm-cluster.ts';
import { format, percentile } from './harness.ts';

const HOSTS = Number(process.env.BENCH_REMEDIATION_HOSTS ?? 200);
const NODES = Number(process.env.BENCH_REMEDIATION_NODES ?? 24);
const WARMUP_MS = 15_000;
const FAULT_EVERY_MS = 500;
/** A real driver line (test/fixtures/kernel/dmesg-gpu-fallen-off-bus.log), its PCI address made the faulted GPU's. */
const XID_79_FIXTURE = new URL('../test/fixtures/kernel/dmesg-gpu-fallen-off-bus.log', import.meta.url);
/** NVSentinel's published fault-to-quarantine figures (1,500 nodes), printed beside ours. */
const NVSENTINEL = { p50Ms: 16_750, p90Ms: 28_000, nodes: 1_500 };
const GOAL_P99_MS = 2_000;

const POLICY = `
breaker: { max_share: 1, window: 1h }
defaults: { approval: { required: false }, undo: { on: never } }
rules:
  - { name: fallen-off-bus, match: ['category="fallen_off_bus"'], action: drain, reason: 'gpualert: GPU fell off the bus (Xid 79)' }
  - { name: xid-79, match: ['xid="79"'], action: drain, reason: 'gpualert: GPU fell off the bus (Xid 79)' }
`;

/**
 * Fault to drain: a real NVRM Xid 79 line appended to a host's kernel log → that host's kernel
 * collector (tailing the file, as `gpualert collect kernel --log` does) → kernel.event → the
 * engine's alert → the remediator's decision → `scontrol update … State=DRAIN` by a real
 * slurmctld (Debian's, a one-machine cluster of NODES fake nodes) → the node drained as
 * `scontrol show node` says, timed per fault from the line's write, while HOSTS hosts × 8 GPUs
 * publish a sample every second, judged by the engine and read by the remediator (the steady
 * load), all in one process on the in-process bus. NVSentinel publishes p50 16.75 s and p90 28 s
 * from fault to quarantine on 1,500 nodes; the goal here is p99 under 2 s.
 *
 * Why an Xid 79 line once gave no alert: the parser keeps each line open (a driver message may
 * continue on the next line) and closes it on the next line or when the burst gap (300 ms)
 * passes on a tick; a replay that pushes the one line and neither ticks nor flushes never
 * emits it. The collector ticks every poll, so the line is an event within the gap.
 */
export async function benchRemediation(): Promise<void> {
  const cluster = await SlurmCluster.start(
    Array.from({ length: NODES }, (_, i) => `gpu-node-${String(i).padStart(3, '0')}`),
    'gpu',
  );
  const bus = new MemoryBus();
  await bus.ensureTopics(ALL_TOPICS);
  const log = createLogger({ name: 'bench', level: (process.env.BENCH_LOG_LEVEL ?? 'silent') as 'silent' });
  const stops: (() => Promise<void>)[] = [];
  let feeding = true;
  try {
    const ruleSet = loadRuleSet();
    const catalog = loadXidCatalog();
    if (!ruleSet.ok || !catalog.ok) throw new Error('the bundled rules do not load');
    const engine = await startEngineService({ bus, store: new MemoryStore(), log, ruleSet: ruleSet.value, catalog: catalog.value, clock: 'wall' });
    stops.push(() => engine.stop());
    const fixture = (await readFile(XID_79_FIXTURE, 'utf8')).split('\n').find((l) => /NVRM: Xid \(PCI:[0-9a-f:.]+\): 79,/.test(l));
    if (fixture === undefined) throw new Error(`no Xid 79 line in ${XID_79_FIXTURE.pathname}`);
    const logs = await mkdtemp(join(tmpdir(), 'gpualert-bench-kernel-'));
    stops.push(() => rm(logs, { recursive: true, force: true }));
    const loaded = parsePolicy('bench.yaml', POLICY);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    const executor = new SlurmExecutor({ scontrol: cluster.bin('scontrol'), sinfo: cluster.bin('sinfo'), env: { ...process.env, ...cluster.env } });
    const core = new RemediationCore(loaded.value, { source: REMEDIATOR_SOURCE, executor: executor.name });
    const remediator = await startRemediator({ bus, log, core, executor });
    stops.push(() => remediator.stop());

    const faultAt = new Map<string, number>();
    const latencies: number[] = [];
    const drained = new Set<string>();
    // Each faulted node is timed until Slurm itself says it is drained (`scontrol show node`),
    // asked as soon as the remediator reports its drain done.
    const watcher = await bus.consume({
      group: 'bench-remediation',
      topics: [TOPICS.actions],
      fromBeginning: false,
      handler: async (batch) => {
        for (const { envelope } of batch.items) {
          if (envelope.type !== 'action.result' || envelope.data.kind !== 'drain' || drained.has(envelope.host)) continue;
          if (envelope.data.outcome !== 'succeeded' && envelope.data.outcome !== 'already_held') continue;
          const at = faultAt.get(envelope.host);
          if (at === undefined) continue;
          if (!(await cluster.nodeDrained(envelope.host))) continue;
          drained.add(envelope.host);
          latencies.push(performance.now() - at);
        }
      },
    });
    stops.push(() => watcher.stop());

    // One kernel collector per node to be faulted, each tailing its own (empty) kernel log.
    const faulted = Array.from({ length: NODES }, (_, i) => `gpu-node-${String(i).padStart(3, '0')}`);
    const logOf = new Map<string, string>();
    for (const host of faulted) {
      const file = join(logs, `${host}.log`);
      await writeFile(file, '');
      logOf.set(host, file);
      const collector = await startKernelCollector({
        bus,
        store: new MemoryStore(),
        source: new FileLineSource(file),
        host,
        labels: { cluster: 'bench', partition: 'gpu' },
        catalog: catalog.value,
        log,
      });
      stops.push(() => collector.stop());
    }
    const loopDelay = monitorEventLoopDelay({ resolution: 20 });
    loopDelay.enable();

    // The steady load: every host's sample each second, paced on the wall clock.
    const start = Date.now();
    const pciOf = new Map<string, string>();
    const fleet = syntheticFleet({ hosts: HOSTS, gpusPerHost: 8, start, minutes: 30, intervalMs: 1_000 });
    const feed = (async () => {
      let pending: Envelope[] = [];
      for (const e of fleet) {
        if (!feeding) break;
        const at = Date.parse(e.ts);
        if (e.type === 'gpu.sample' && !pciOf.has(e.host) && e.data.gpus[0]?.pci_bus) pciOf.set(e.host, e.data.gpus[0].pci_bus);
        if (at > Date.now()) {
          await flush(bus, pending);
          pending = [];
          await new Promise((r) => setTimeout(r, at - Date.now()));
        }
        pending.push(e);
      }
    })();
    await new Promise((r) => setTimeout(r, WARMUP_MS));

    for (const host of faulted) {
      // The driver's line, on the host's GPU 0 (so the engine knows which GPU fell off).
      const line = fixture.replace(/\(PCI:[0-9a-f:.]+\)/, `(PCI:${pciOf.get(host) ?? '0000:18:00'})`);
      faultAt.set(host, performance.now());
      await appendFile(logOf.get(host) ?? join(logs, `${host}.log`), `${line}\n`);
      await new Promise((r) => setTimeout(r, FAULT_EVERY_MS));
    }
    const deadline = Date.now() + 60_000;
    while (drained.size < NODES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    feeding = false;
    await feed;
    if (drained.size < NODES) {
      // What the pipeline made of the faults, to see where it stopped.
      const seen = new Map<string, number>();
      for (const topic of [TOPICS.alerts, TOPICS.actions, TOPICS.deadletter, TOPICS.kernelEvents, TOPICS.gpuSamples])
        for (const m of await bus.read(topic)) {
          const e = JSON.parse(m.value.toString('utf8')) as {
            type?: string;
            data?: { rule?: string; phase?: string; outcome?: string; reason?: string; error?: string };
          };
          const what = `${topic} ${e.type ?? '?'} ${e.data?.rule ?? e.data?.phase ?? e.data?.outcome ?? ''} ${(e.data?.error ?? '').slice(0, 80)}`;
          seen.set(what, (seen.get(what) ?? 0) + 1);
        }
      console.log('remediation bench: not every fault drained; what the topics hold:', [...seen].map(([k, n]) => `${n} × ${k}`).join('; '));
    }
    loopDelay.disable();
    const inSlurm = cluster.sinfo().filter((l) => /\|drained\|gpualert: GPU fell off the bus \(Xid 79\)$/.test(l)).length;
    const ms = (v: number) => `${format(v)} ms`;
    const p99 = percentile(latencies, 99);
    console.log(
      `remediation: Xid 79 kernel line → node drained in Slurm (${NODES} faults, ${HOSTS} hosts × 8 GPUs sampled every 1 s)`,
      `\n  gpualert     p50 ${ms(percentile(latencies, 50))}, p90 ${ms(percentile(latencies, 90))}, p99 ${ms(p99)}, max ${ms(Math.max(...latencies))}; ${latencies.length}/${NODES} drained (sinfo shows ${inSlurm} with gpualert's reason); event-loop delay p99 ${ms(loopDelay.percentile(99) / 1e6)}`,
      `\n  NVSentinel   p50 ${ms(NVSENTINEL.p50Ms)}, p90 ${ms(NVSENTINEL.p90Ms)} (published, ${format(NVSENTINEL.nodes)} nodes)`,
      `\n  goal         p99 < ${ms(GOAL_P99_MS)}: ${latencies.length === NODES && p99 < GOAL_P99_MS ? 'met' : 'NOT met'}`,
      `\n  (${latencies.length} samples on one shared machine: the figures move with its load; the slurmctld, the fake slurmd's and the pipeline share its cores)`,
    );
  } finally {
    feeding = false;
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await bus.close();
    await cluster.stop();
  }
}

async function flush(bus: MemoryBus, envelopes: readonly Envelope[]): Promise<void> {
  const byTopic = new Map<string, Envelope[]>();
  for (const e of envelopes) {
    const topic = e.type === 'gpu.sample' ? TOPICS.gpuSamples : e.type === 'host.inventory' ? TOPICS.hostInventory : undefined;
    if (topic) byTopic.set(topic, [...(byTopic.get(topic) ?? []), e]);
  }
  for (const [topic, list] of byTopic) await bus.publish(topic, list.map(envelopeMessage));
}
