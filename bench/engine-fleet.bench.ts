import { resolve } from 'node:path';
import { envelopeMessage, KafkaBus, type OutgoingMessage } from '@gpualert/bus';
import { TOPICS } from '@gpualert/schema';
import { syntheticFleet } from '@gpualert/test-support';
import { Kafka, logLevel } from 'kafkajs';
import { envNumber } from '../test/infra/env-number.ts';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { format, memoryOf, redisFootprint, shippedEnv, startProcess, until, type BenchProcess } from './harness.ts';

const BIN = resolve(import.meta.dirname, '../bin/gpualert.mjs');
const GPUS = 8;
const PARTITIONS = 6;

/** One fleet size drained by one number of engines. */
interface Row {
  gpus: number;
  engines: number;
  backlog_msgs: number;
  /** The messages judged after the last engine joined: the drain measured. */
  measured_msgs: number;
  gpu_samples_per_s: number;
  gpu_samples_per_s_per_engine: number;
  engine_rss_mb: number[];
  engine_heap_used_mb: number[];
  redis_engine_mb: number;
  redis_bytes_per_host: number;
  tick_wall_ms: number;
  tick_judging_ms: number;
  ticks: number;
}

/** A histogram's `_sum` and `_count` summed over the engines' `/metrics`. */
async function histogram(engines: readonly BenchProcess[], name: string): Promise<{ sum: number; count: number }> {
  let sum = 0;
  let count = 0;
  for (const engine of engines) {
    const text = await fetch(`http://127.0.0.1:${engine.port()}/metrics`).then((r) => r.text());
    sum += Number(new RegExp(`^${name}_sum ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? 0);
    count += Number(new RegExp(`^${name}_count ([0-9]+)$`, 'm').exec(text)?.[1] ?? 0);
  }
  return { sum, count };
}

/**
 * The engine service as the fleet grows (issue 34, items 2 and 5): for each fleet size and each
 * number of engines, a fresh topic and key prefix, a backlog of the fleet's samples on the real
 * Kafka, and `gpualert engine` processes (wall clock, as deployed) in one consumer group on the
 * real Redis. Measured per row: GPU samples judged a second from the moment the last engine joined
 * the group until every offset is committed (judged, state saved, offsets committed), each
 * engine's RSS after the drain, the engine's keys in Redis, and the tick — absence, quiet periods
 * and escalation for every owned host, every 2 s — over the next ticks, with the fleet reporting.
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
        try {
          await bus.ensureTopics(Object.values(TOPICS));
          const scrapes = Math.max(6, Math.ceil(backlogTarget / hosts));
          // The last scrape a minute ahead of now (the engine takes up to 5): the fleet is still reporting when the ticks are read.
          const start = Date.now() + 60_000 - scrapes * 10_000;
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
          const joins: number[] = [];
          const engines = Array.from({ length: count }, () => {
            const engine = startProcess(BIN, profile, ['engine', '--log-level', 'info'], { ...shippedEnv('engine'), ...env });
            for (const stream of [engine.stdout!, engine.stderr!]) {
              stream.on('data', (chunk: Buffer) => {
                if (chunk.includes('group_joined')) joins.push(performance.now());
              });
            }
            return engine;
          });
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
          if (joins.length < count || from === polls.at(-1))
            throw new Error(`engine-fleet bench: the backlog drained before ${count} engines had joined; raise GPUALERT_BENCH_FLEET_BACKLOG`);
          const window = backlog - from.judged;
          const rate = (window / ((drained - from.at) / 1000)) * GPUS;
          for (const engine of engines) {
            if (engine.exitCode !== null) throw new Error(`engine-fleet bench: an engine exited (${engine.exitCode}):\n${engine.output().slice(-3_000)}`);
          }
          await until(() => engines.every((e) => e.port() !== undefined), 30_000, 'the engines to say their ports');
          const memory = await Promise.all(engines.map((e) => memoryOf(e, 'gpualert_engine_')));
          // The ticks over the next 4 intervals, the fleet reporting (its last scrape is ahead of now).
          const [wallBefore, judgingBefore] = [
            await histogram(engines, 'gpualert_engine_tick_wall_seconds'),
            await histogram(engines, 'gpualert_engine_tick_duration_seconds'),
          ];
          await new Promise((r) => setTimeout(r, 8_500));
          const [wallAfter, judgingAfter] = [
            await histogram(engines, 'gpualert_engine_tick_wall_seconds'),
            await histogram(engines, 'gpualert_engine_tick_duration_seconds'),
          ];
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
            engine_rss_mb: memory.map((m) => Math.round(m?.rss ?? NaN)),
            engine_heap_used_mb: memory.map((m) => Math.round(m?.heap_used ?? NaN)),
            redis_engine_mb: Math.round((engineBytes / 1e6) * 100) / 100,
            redis_bytes_per_host: Math.round(engineBytes / hosts),
            tick_wall_ms: ticks > 0 ? Math.round(((wallAfter.sum - wallBefore.sum) / ticks) * 1e4) / 10 : NaN,
            tick_judging_ms: ticks > 0 ? Math.round(((judgingAfter.sum - judgingBefore.sum) / ticks) * 1e4) / 10 : NaN,
            ticks,
          };
          rows.push(row);
          console.log(
            `${`${format(row.gpus)} GPUs, ${count} engine${count > 1 ? 's' : ''}`.padEnd(26)} ${format(row.gpu_samples_per_s).padStart(9)} GPU samples/s (${format(row.gpu_samples_per_s_per_engine)} an engine; ${format(window)} of ${format(backlog)} msgs after the last join); RSS ${row.engine_rss_mb.join(' + ')} MB; Redis engine:* ${format(row.redis_engine_mb)} MB (${format(row.redis_bytes_per_host)} B a host); tick ${format(row.tick_wall_ms)} ms wall, ${format(row.tick_judging_ms)} ms judging (${ticks} ticks)`,
          );
          for (const engine of engines) engine.kill('SIGTERM');
          await Promise.all(engines.map((e) => new Promise((r) => (e.exitCode !== null ? r(undefined) : e.once('exit', r)))));
        } finally {
          await bus.close();
          // Half a gigabyte a row at the largest size: the broker's disk is not kept.
          const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
          await admin.deleteTopics({ topics }).catch(() => {});
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
