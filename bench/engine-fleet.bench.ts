import { resolve } from 'node:path';
import { envelopeMessage, type OutgoingMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { TOPICS } from '@gpualert/schema';
import { syntheticFleet } from '@gpualert/test-support';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { envNumber } from '../test/infra/env-number.ts';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { format, memoryOf, redisFootprint, residentMb, shippedEnv, startProcess, until, type BenchProcess } from './harness.ts';

const BIN = resolve(import.meta.dirname, '../bin/gpualert.mjs');
const GPUS = 8;
const PARTITIONS = 6;

/** One fleet size drained by one number of engines. */
interface Row {
  gpus: number;
  engines: number;
  backlog_msgs: number;
  /** The messages judged after the last join of the group's members: the drain measured. */
  measured_msgs: number;
  gpu_samples_per_s: number;
  gpu_samples_per_s_per_engine: number;
  /** From /proc, before the bench's first scrape (a render of the fleet's metrics costs memory of its own). */
  engine_rss_mb: number[];
  engine_heap_used_mb: number[];
  redis_engine_mb: number;
  redis_bytes_per_host: number;
  tick_wall_ms: number;
  tick_judging_ms: number;
  ticks: number;
  /** Alerts firing at the end of the tick window: near none while the fleet reports. */
  alerts_firing: number;
}

/** Each engine's `/metrics` text. */
async function scrape(engines: readonly BenchProcess[]): Promise<string[]> {
  return Promise.all(engines.map((engine) => fetch(`http://127.0.0.1:${engine.port()}/metrics`).then((r) => r.text())));
}

/** A histogram's `_sum` and `_count` summed over the engines' texts. */
function histogram(texts: readonly string[], name: string): { sum: number; count: number } {
  let sum = 0;
  let count = 0;
  for (const text of texts) {
    sum += Number(new RegExp(`^${name}_sum ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? 0);
    count += Number(new RegExp(`^${name}_count ([0-9]+)$`, 'm').exec(text)?.[1] ?? 0);
  }
  return { sum, count };
}

/** Alerts firing over the engines (`gpualert_alerts_firing`): a fleet still reporting has next to none. */
function firing(texts: readonly string[]): number {
  let n = 0;
  for (const text of texts) for (const match of text.matchAll(/^gpualert_alerts_firing\{[^}]*\} (\d+)$/gm)) n += Number(match[1]);
  return n;
}

/** Whether a child still runs (neither exited nor killed by a signal). */
const alive = (child: BenchProcess) => child.exitCode === null && child.signalCode === null;

/** Every key of the prefix, removed: the machine's Redis is shared, and a 100,000-GPU row leaves 44 MB. */
async function forgetKeys(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { maxRetriesPerRequest: 2 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
      cursor = next;
      if (keys.length > 0) await client.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

/**
 * The engine service as the fleet grows (issue 34, items 2 and 5): for each fleet size and each
 * number of engines, a fresh topic and key prefix, a backlog of the fleet's samples on the real
 * Kafka, and `gpualert engine` processes (wall clock, as deployed) in one consumer group on the
 * real Redis. Measured per row: GPU samples judged a second from the group's last join (every
 * engine in it) until every offset is committed (judged, state saved, offsets committed), each
 * engine's RSS after the drain (from /proc, before any scrape), the engine's keys in Redis, and the
 * tick — absence, quiet periods and escalation for every owned host, every 2 s — over the next
 * ticks, with the fleet reporting (the alerts firing then are printed: near none). Each row's
 * topics and keys are removed after it.
 *
 * GPUALERT_BENCH_FLEET_HOSTS (default 125,1250,12500: 1,000, 10,000, 100,000 GPUs),
 * GPUALERT_BENCH_FLEET_ENGINES (default 1,2,3), GPUALERT_BENCH_FLEET_BACKLOG (messages a row,
 * default 120,000; at least 6 scrapes a host, which 12,500 hosts pass).
 */
export async function benchEngineFleet(): Promise<void> {
  const sizes = (process.env.GPUALERT_BENCH_FLEET_HOSTS ?? '125,1250,12500').split(',').map(Number);
  const counts = (process.env.GPUALERT_BENCH_FLEET_ENGINES ?? '1,2,3').split(',').map(Number);
  const backlogTarget = envNumber('GPUALERT_BENCH_FLEET_BACKLOG', 120_000);
  // GPUALERT_BENCH_PROFILE=DIR: a CPU profile of each engine there, to see where its time goes.
  const profile = process.env.GPUALERT_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.GPUALERT_BENCH_PROFILE}`] : [];
  console.log(
    `\n## The engine service as the fleet grows: ${GPUS} GPUs a host, ${PARTITIONS} partitions, real Kafka and Redis, engines ${counts.join(', ')} at each size`,
  );
  console.log(`services run ${process.env.GPUALERT_USE_DIST === '1' ? 'bundled (dist/)' : 'from source (tsx)'}`);
  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const redis = await ensureRedis();
  const brokers = process.env.KAFKA_BROKERS ?? broker!.brokers;
  const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const rows: Row[] = [];
  const running: BenchProcess[] = [];
  try {
    for (const hosts of sizes) {
      for (const count of counts) {
        const prefix = `fleet-${hosts}-${count}-${Date.now()}.`;
        const bus = new KafkaBus({ brokers: brokers.split(','), topicPrefix: prefix, partitions: PARTITIONS });
        const engines: BenchProcess[] = [];
        try {
          await bus.ensureTopics(Object.values(TOPICS));
          const scrapes = Math.max(6, Math.ceil(backlogTarget / hosts));
          // The last scrape 3 minutes ahead of now (the engine takes up to 5): the fleet is still reporting when the ticks are read.
          const start = Date.now() + 180_000 - scrapes * 10_000;
          const backlog = await publishBacklog(bus, hosts, start, scrapes);
          const env = {
            KAFKA_BROKERS: brokers,
            REDIS_URL: redis.url,
            GPUALERT_TOPIC_PREFIX: prefix,
            GPUALERT_KEY_PREFIX: `${prefix}:`,
            GPUALERT_PARTITIONS: String(PARTITIONS),
            GPUALERT_ENGINE_PORT: '0',
            GPUALERT_ENGINE_LISTEN: '127.0.0.1',
          };
          // Every member says group_joined at every rebalance: which engines have joined, and when the last join was.
          const joins: number[] = [];
          const joined = new Set<number>();
          for (let i = 0; i < count; i += 1) {
            const engine = startProcess(BIN, profile, ['engine', '--log-level', 'info'], { ...shippedEnv('engine'), ...env });
            for (const stream of [engine.stdout!, engine.stderr!]) {
              stream.on('data', (chunk: Buffer) => {
                if (!chunk.includes('group_joined')) return;
                joined.add(i);
                joins.push(performance.now());
              });
            }
            engines.push(engine);
          }
          running.push(...engines);
          const judged = async (): Promise<number> => {
            const offsets = await admin.fetchOffsets({ groupId: `${prefix}gpualert-engine`, topics: [`${prefix}${TOPICS.gpuSamples}`] });
            return offsets.flatMap((t) => t.partitions).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
          };
          // Counted from the last join (the group's last rebalance): the drain is of the whole group, not of its first member alone.
          const polls: { at: number; judged: number }[] = [];
          await until(
            async () => {
              polls.push({ at: performance.now(), judged: await judged() });
              return polls.at(-1)!.judged >= backlog;
            },
            900_000,
            `${count} engine(s) to drain ${backlog} samples of ${hosts} hosts`,
          );
          const drained = polls.at(-1)!.at;
          const lastJoin = Math.max(0, ...joins);
          const from = polls.find((p) => p.at >= lastJoin) ?? polls.at(-1)!;
          if (joined.size < count || from === polls.at(-1))
            throw new Error(`engine-fleet bench: the backlog drained before ${count} engines had joined; raise GPUALERT_BENCH_FLEET_BACKLOG`);
          const window = backlog - from.judged;
          const rate = (window / ((drained - from.at) / 1000)) * GPUS;
          for (const engine of engines) {
            if (!alive(engine))
              throw new Error(`engine-fleet bench: an engine exited (${engine.exitCode ?? engine.signalCode}):\n${engine.output().slice(-3_000)}`);
          }
          const rss = engines.map((e) => residentMb(e.pid));
          await until(() => engines.every((e) => e.port() !== undefined), 30_000, 'the engines to say their ports');
          const memory = await Promise.all(engines.map((e) => memoryOf(e, 'gpualert_engine_')));
          // The ticks over the next 4 intervals, the fleet reporting (its last scrape is ahead of now). A
          // tick that meets the second scrape's render waits for its slices too (bench fleet-metrics: 1.7 s
          // of render at 100,000 GPUs on one engine, in 10 ms slices).
          const before = await scrape(engines);
          await new Promise((r) => setTimeout(r, 8_500));
          const after = await scrape(engines);
          const [wallBefore, judgingBefore] = [
            histogram(before, 'gpualert_engine_tick_wall_seconds'),
            histogram(before, 'gpualert_engine_tick_duration_seconds'),
          ];
          const [wallAfter, judgingAfter] = [histogram(after, 'gpualert_engine_tick_wall_seconds'), histogram(after, 'gpualert_engine_tick_duration_seconds')];
          const ticks = wallAfter.count - wallBefore.count;
          const footprint = await redisFootprint(redis.url, `${prefix}:`);
          const engineBytes = [...footprint.kinds].filter(([kind]) => kind.startsWith('engine:')).reduce((n, [, k]) => n + k.bytes, 0);
          const row: Row = {
            gpus: hosts * GPUS,
            engines: count,
            backlog_msgs: backlog,
            measured_msgs: window,
            gpu_samples_per_s: Math.round(rate),
            gpu_samples_per_s_per_engine: Math.round(rate / count),
            engine_rss_mb: rss.map((mb) => Math.round(mb)),
            engine_heap_used_mb: memory.map((m) => Math.round(m?.heap_used ?? NaN)),
            redis_engine_mb: Math.round((engineBytes / 1e6) * 100) / 100,
            redis_bytes_per_host: Math.round(engineBytes / hosts),
            tick_wall_ms: ticks > 0 ? Math.round(((wallAfter.sum - wallBefore.sum) / ticks) * 1e4) / 10 : NaN,
            tick_judging_ms: ticks > 0 ? Math.round(((judgingAfter.sum - judgingBefore.sum) / ticks) * 1e4) / 10 : NaN,
            ticks,
            alerts_firing: firing(after),
          };
          rows.push(row);
          console.log(
            `${`${format(row.gpus)} GPUs, ${count} engine${count > 1 ? 's' : ''}`.padEnd(26)} ${format(row.gpu_samples_per_s).padStart(9)} GPU samples/s (${format(row.gpu_samples_per_s_per_engine)} an engine; ${format(window)} of ${format(backlog)} msgs after the last join); RSS ${row.engine_rss_mb.join(' + ')} MB; Redis engine:* ${format(row.redis_engine_mb)} MB (${format(row.redis_bytes_per_host)} B a host); tick ${format(row.tick_wall_ms)} ms wall, ${format(row.tick_judging_ms)} ms judging (${ticks} ticks, ${format(row.alerts_firing)} alerts firing)`,
          );
        } finally {
          // The row's engines stopped first: one still running would make its topics again.
          for (const engine of engines) if (alive(engine)) engine.kill('SIGTERM');
          await until(() => !engines.some(alive), 30_000, 'the engines to stop').catch(() => engines.forEach((e) => e.kill('SIGKILL')));
          await bus.close();
          // Half a gigabyte a row at the largest size: the broker's disk is not kept, nor the row's keys.
          const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
          await admin.deleteTopics({ topics }).catch(() => {});
          await forgetKeys(redis.url, `${prefix}:`);
        }
      }
    }
    console.log(JSON.stringify({ engine_fleet: rows }));
  } finally {
    for (const child of running) child.kill('SIGTERM');
    await admin.disconnect();
    await broker?.destroy();
    await redis.stop();
  }
}

/** The fleet's inventories, then `scrapes` samples a host ten seconds apart from `start`, published in chunks of 500, four at a time; resolves to the samples published. */
async function publishBacklog(bus: KafkaBus, hosts: number, start: number, scrapes: number): Promise<number> {
  let published = 0;
  const inFlight = new Set<Promise<void>>();
  const send = async (topic: string, messages: OutgoingMessage[]) => {
    const sending = bus.publish(topic, messages).finally(() => inFlight.delete(sending));
    inFlight.add(sending);
    if (inFlight.size >= 4) await Promise.race(inFlight);
  };
  let samples: OutgoingMessage[] = [];
  let inventories: OutgoingMessage[] = [];
  for (const envelope of syntheticFleet({ hosts, gpusPerHost: GPUS, start, minutes: (scrapes * 10) / 60, seed: 5 })) {
    if (envelope.type === 'host.inventory') {
      inventories.push(envelopeMessage(envelope));
      if (inventories.length === 500) {
        await send(TOPICS.hostInventory, inventories);
        inventories = [];
      }
      continue;
    }
    samples.push(envelopeMessage(envelope));
    published += 1;
    if (samples.length === 500) {
      await send(TOPICS.gpuSamples, samples);
      samples = [];
    }
  }
  if (inventories.length > 0) await send(TOPICS.hostInventory, inventories);
  if (samples.length > 0) await send(TOPICS.gpuSamples, samples);
  await Promise.all(inFlight);
  return published;
}
