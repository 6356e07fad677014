import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { envelopeMessage, KafkaBus } from '@gpualert/bus';
import { syntheticFleet } from '@gpualert/engine';
import { TOPICS } from '@gpualert/schema';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { format, median, percentile } from './harness.ts';

const BIN = resolve(import.meta.dirname, '../bin/gpualert.mjs');

function start(args: string[], env: NodeJS.ProcessEnv): ChildProcess & { output: () => string } {
  // GPUALERT_E2E_PROFILE=DIR writes a CPU profile of the engine there, to see where its time goes.
  const profile = args[0] === 'engine' && process.env.GPUALERT_E2E_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.GPUALERT_E2E_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-20_000)));
  child.stderr!.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-20_000)));
  return Object.assign(child, { output: () => output });
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`e2e bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function rssMb(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
}

/**
 * The whole pipeline as separate processes on the real Kafka and Redis: the raw ceiling of a bare
 * kafkajs producer and consumer, samples judged end to end by `gpualert engine`, an Xid 79 line
 * appended to a collector's log until the page reaches a local PagerDuty-shaped receiver, and the
 * engine's memory. `--quick` (or GPUALERT_BENCH_QUICK=1) runs a smaller version.
 */
export async function benchE2e(): Promise<void> {
  const quick = process.argv.includes('--quick') || process.env.GPUALERT_BENCH_QUICK === '1';
  const hosts = quick ? 125 : 1_000;
  const gpus = 8;
  const seconds = quick ? 15 : 40;
  const injections = quick ? 10 : 30;
  console.log(`\n## End to end: ${hosts} hosts × ${gpus} GPUs, separate processes, real Kafka and Redis`);
  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const redis = await ensureRedis();
  const brokers = process.env.KAFKA_BROKERS ?? broker!.brokers;
  const prefix = `e2e-${Date.now()}.`;
  const bus = new KafkaBus({ brokers: brokers.split(','), topicPrefix: prefix, partitions: 6 });
  await bus.ensureTopics(Object.values(TOPICS));
  const fleet = [...syntheticFleet({ hosts, gpusPerHost: gpus, start: Date.parse('2026-06-01T00:00:00Z'), minutes: quick ? 3 : 2, seed: 4 })];
  const samples = fleet.filter((e) => e.type === 'gpu.sample').map(envelopeMessage);
  const inventories = fleet.filter((e) => e.type === 'host.inventory').map(envelopeMessage);
  const children: ChildProcess[] = [];
  const pages = new Map<string, number>();
  const pager = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { dedup_key: string; event_action: string; payload: { source: string } };
      if (body.event_action === 'trigger' && !pages.has(body.payload.source)) pages.set(body.payload.source, performance.now());
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"success"}');
    });
  });
  await new Promise<void>((r) => pager.listen(0, '127.0.0.1', r));
  const pagerPort = (pager.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-e2e-'));
  const routes = join(dir, 'routes.yaml');
  writeFileSync(routes, 'receivers:\n  - name: pager\n    channel: pagerduty\n    settings: { url: "env:PD_URL", routing_key: "env:PD_KEY" }\nroute:\n  receiver: pager\n  page: true\n');
  const env = {
    KAFKA_BROKERS: brokers, REDIS_URL: redis.url, GPUALERT_TOPIC_PREFIX: prefix, GPUALERT_KEY_PREFIX: `${prefix}:`, GPUALERT_PARTITIONS: '6',
    GPUALERT_ROUTES: routes, PD_URL: `http://127.0.0.1:${pagerPort}/v2/enqueue`, PD_KEY: 'x'.repeat(32), GPUALERT_NOTIFIER_PORT: '0',
    GPUALERT_NOTIFIER_LISTEN: '127.0.0.1', GPUALERT_LOG_LEVEL: 'warn',
  };
  try {
    // 1. The raw ceiling: a bare kafkajs producer and consumer with the same settings.
    const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING });
    const raw = `${prefix}raw`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: raw, numPartitions: 6 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (let i = 0; i < samples.length; i += 150) {
      await producer.send({ topic: raw, acks: -1, messages: samples.slice(i, i + 150).map((m) => ({ key: m.key, value: m.value as string })) });
    }
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: `${prefix}raw`, maxWaitTimeInMs: 25 });
    await consumer.connect();
    await consumer.subscribe({ topics: [raw], fromBeginning: true });
    let consumed = 0;
    let firstAt = 0;
    await consumer.run({ eachBatch: async ({ batch }) => { if (!firstAt) firstAt = performance.now(); consumed += batch.messages.length; } });
    await until(() => consumed >= samples.length, 120_000, 'the raw consumer');
    const rawRate = samples.length / ((performance.now() - firstAt) / 1000);
    await consumer.disconnect();

    // 2. The pipeline: engine and notifier as their own processes; samples judged end to end.
    const engine = start(['engine', '--clock', 'event', '--log-level', 'info'], env);
    const notifier = start(['notifier', '--log-level', 'info'], env);
    children.push(engine, notifier);
    await until(() => engine.output().includes('group_joined') && notifier.output().includes('group_joined'), 60_000, 'the engine and the notifier to join their groups');
    await bus.publish(TOPICS.hostInventory, inventories);
    const kafkaAdmin = kafka.admin();
    await kafkaAdmin.connect();
    const judged = async (): Promise<number> => {
      const offsets = await kafkaAdmin.fetchOffsets({ groupId: `${prefix}gpualert-engine`, topics: [`${prefix}${TOPICS.gpuSamples}`] });
      return offsets.flatMap((t) => t.partitions).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
    };
    // Steady load for `seconds`: the fleet's samples over and over, as fast as the bus takes them,
    // while the engine's committed offsets say how many it has judged.
    let published = 0;
    let publishing = true;
    const publisher = (async () => {
      while (publishing) {
        for (let i = 0; i < samples.length && publishing; i += 500) {
          await bus.publish(TOPICS.gpuSamples, samples.slice(i, i + 500));
          published += Math.min(500, samples.length - i);
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 3_000)); // warm up: joins, JIT, first batches
    const judgedAtStart = await judged();
    const windowStart = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const judgedAtEnd = await judged();
    const windowSeconds = (performance.now() - windowStart) / 1000;
    publishing = false;
    await publisher;
    const lag = published - judgedAtEnd;
    const pipelineRate = (judgedAtEnd - judgedAtStart) / windowSeconds;
    const engineRss = rssMb(engine.pid);
    await kafkaAdmin.disconnect();

    // 3. Xid 79 appended to a collector's kernel log → page at the receiver.
    const latencies: number[] = [];
    for (let i = 0; i < injections; i += 1) {
      // Each injection a different host of the kernel log's view: a distinct fault, a distinct page.
      const host = `xid-host-${i}`;
      writeFileSync(join(dir, `${host}.log`), '');
      const c = start(['collect', 'kernel', '--file', join(dir, `${host}.log`), '--host', host, '--nvidia-smi', '/bin/false', '--log-level', 'info'], env);
      children.push(c);
      await until(() => c.output().includes('kernel_collector_started'), 30_000, `the collector of ${host}`);
      const t0 = performance.now();
      appendFileSync(join(dir, `${host}.log`), `[ 100.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n`);
      await until(() => pages.has(host), 30_000, `the page for ${host}`).catch(() => {});
      if (pages.has(host)) latencies.push(pages.get(host)! - t0);
      c.kill('SIGTERM');
    }
    const perThousand = engineRss / ((hosts * gpus) / 1_000);
    console.log(`${'raw ceiling: bare kafkajs consumer'.padEnd(58)} ${format(rawRate).padStart(12)} msgs/s`);
    console.log(`${'pipeline: GPU samples judged end to end'.padEnd(58)} ${format(pipelineRate * gpus).padStart(12)} GPU samples/s (${format(pipelineRate)} msgs/s, ${format(pipelineRate / rawRate)} of raw; lag at the end ${lag} msgs)`);
    console.log(`${'Xid 79 line → page at the receiver'.padEnd(58)} p50 ${format(median(latencies))} ms, p99 ${format(percentile(latencies, 99))} ms (${latencies.length}/${injections})`);
    console.log(`${'engine RSS per 1,000 GPUs'.padEnd(58)} ${format(perThousand).padStart(12)} MB (${format(engineRss)} MB for ${hosts * gpus} GPUs)`);
    console.log(JSON.stringify({
      pipeline_gpu_samples_per_s: Math.round(pipelineRate * gpus), raw_consume_msgs_per_s: Math.round(rawRate), pipeline_vs_raw: Math.round((pipelineRate / rawRate) * 1000) / 1000,
      xid_to_page_p50_ms: Math.round(median(latencies)), xid_to_page_p99_ms: Math.round(percentile(latencies, 99)), engine_rss_mb_per_1000_gpus: Math.round(perThousand * 10) / 10,
    }));
  } finally {
    for (const child of children) child.kill('SIGTERM');
    pager.close();
    await bus.close();
    await broker?.destroy();
    await redis.stop();
  }
}
