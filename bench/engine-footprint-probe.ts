import { readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

/**
 * One child process of the engine-footprint bench (engine-footprint.bench.ts runs it with
 * `--expose-gc`, under tsx as a checkout runs `gpualert engine`, and bundled as an installed one
 * does). It loads what `gpualert engine` loads, part by part, then holds the state the service
 * holds for HOSTS × 8 GPUs fed SCRAPES samples each, and prints one JSON line per step: the
 * process's RSS and V8's heap after a full GC. Then it lets go of the parts one by one: what each
 * release frees is what that part held.
 */
const HOSTS = Number(process.env.GPUALERT_BENCH_HOSTS ?? 125);
const SCRAPES = Number(process.env.GPUALERT_BENCH_SCRAPES ?? 320);
const PARTITIONS = 6;
const GPUS = 8;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('engine-footprint probe: run with --expose-gc');

function step(name: string, extra: Record<string, unknown> = {}): void {
  gc!();
  gc!();
  const usage = process.memoryUsage();
  const code = getHeapSpaceStatistics()
    .filter((s) => s.space_name.startsWith('code'))
    .reduce((sum, s) => sum + s.space_used_size, 0);
  // RSS in two: the process's own pages (heap, stacks, malloc) and pages of files it maps (node's binary: shared, clean).
  const status = readFileSync('/proc/self/status', 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) * 1024;
  process.stdout.write(
    `${JSON.stringify({ step: name, rss: usage.rss, rssAnon: kib('RssAnon'), rssFile: kib('RssFile'), heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, external: usage.external, arrayBuffers: usage.arrayBuffers, code, ...extra })}\n`,
  );
}

step('node');
// The npm dependencies of the engine's graph, one at a time (each delta is its module code and what it makes at load).
for (const name of ['zod', 'yaml', 'ulid', 'pino', 'prom-client', 'kafkajs', 'ioredis', 'commander']) {
  await import(name);
  step(`import ${name}`);
}
// What `gpualert engine` loads: its command and all that it imports (the workspace packages).
const command = await import('../packages/cli/src/commands/engine.ts');
const { loadJudgement } = await import('../packages/cli/src/commands/load-files.ts');
const { Engine, dict, emptyEngineState, StreamClock } = await import('@gpualert/engine');
const { EngineFleetView, EngineMetrics } = await import('@gpualert/engine-service');
const { parseEnvelope } = await import('@gpualert/schema');
const { syntheticFleet } = await import('@gpualert/test-support');
step('import the engine command');

const { ruleSet, catalog } = loadJudgement(undefined, 'engine');
const prices = command.bundledPrices('engine');
step('rules, catalog and prices loaded');

// The service's parts (engine-service.ts, owned-hosts.ts), fed as judgeBatch feeds them.
const engine = new Engine(ruleSet, catalog, false);
const state = emptyEngineState();
const metrics = new EngineMetrics(ruleSet, prices);
const fleetView = new EngineFleetView(ruleSet, 'event');
metrics.attach(state);
fleetView.attach(state);
const partitionHosts = Array.from({ length: PARTITIONS }, () => new Set<string>());
const clocks = partitionHosts.map((hosts) => new StreamClock(engine, 'event', hosts));
const partitionOf = new Map<string, number>();
let offset = 0;
let alerts = 0;
let savedChars = 0;
const T0 = Date.parse('2026-06-01T00:00:00Z');
for (const made of syntheticFleet({ hosts: HOSTS, gpusPerHost: GPUS, start: T0, minutes: (SCRAPES * 10) / 60, seed: 4 })) {
  // As the bus hands it over: a message's JSON parsed and checked.
  const parsed = parseEnvelope(JSON.stringify(made));
  if (!parsed.ok) throw new Error('engine-footprint probe: a synthetic envelope refused');
  const envelope = parsed.value;
  let partition = partitionOf.get(envelope.host);
  if (partition === undefined) partitionOf.set(envelope.host, (partition = partitionOf.size % PARTITIONS));
  partitionHosts[partition]!.add(envelope.host);
  alerts += clocks[partition]!.judge(state, envelope).length;
  const host = state.hosts[envelope.host]!;
  host.offsets[`gpualert.gpu.samples/${partition}`] = offset += 1;
  if (envelope.type === 'gpu.sample') metrics.noteSample(envelope.host, envelope.data);
  fleetView.note(envelope);
  savedChars = JSON.stringify(host).length; // saved after its batch: garbage here, a Redis value there
}
const hosts = Object.keys(state.hosts).length;
step('fleet judged', { hosts, gpus: hosts * GPUS, samples: offset, alerts, savedChars });
// A snapshot and a scrape build and drop their answers; once made they must not stay.
await fleetView.snapshot();
await metrics.render();
step('after a /v1/fleet snapshot and a /metrics render');

// Let go of each part; the heap freed is what it held.
fleetView.forget();
step('released: fleet view (history rings, latest samples)');
metrics.forgetSamples();
step('released: metrics latest samples');
state.hosts = dict();
step('released: per-host state (baselines, trackers)');
state.fleet = emptyEngineState().fleet;
for (const set of partitionHosts) set.clear();
partitionOf.clear();
step('released: fleet state and partition indexes');
