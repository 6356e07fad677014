import type { ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { envelopeMessage, type OutgoingMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { syntheticFleet } from '@gpualert/test-support';
import { TOPICS } from '@gpualert/schema';
import { Kafka, logLevel } from 'kafkajs';
import { envNumber } from '../test/infra/env-number.ts';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { FakeNvidiaSmi } from '../test/infra/fake-nvidia-smi.ts';
import { MALLOC_ARENA_MAX, SERVICE_NODE_OPTIONS } from '../tools/service-env.ts';
import {
  format,
  median,
  memoryLine,
  memoryOf,
  percentile,
  redisFootprint,
  residentMb as rssMb,
  shippedEnv,
  startProcess,
  until,
  type BenchProcess,
} from './harness.ts';

const BIN = resolve(import.meta.dirname, '../bin/gpualert.mjs');

function start(args: string[], env: NodeJS.ProcessEnv): BenchProcess {
  // GPUALERT_E2E_PROFILE=DIR writes a CPU profile of the engine there, to see where its time goes.
  const profile = args[0] === 'engine' && process.env.GPUALERT_E2E_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.GPUALERT_E2E_PROFILE}`] : [];
  return startProcess(BIN, profile, args, { ...shippedEnv(args[0]), ...env });
}

/**
 * The whole pipeline as separate processes on the real Kafka and Redis, measured the same way on
 * both sides: a backlog of the fleet's samples drained by a bare kafkajs consumer (the raw
 * ceiling) and the same backlog drained by `gpualert engine` (samples judged, state saved,
 * offsets committed). Then a steady load at a fraction of that rate, during which an Xid 79 line
 * appended to a host agent's kernel log (once the engine has judged that host's samples) is timed
 * until the page reaches a local PagerDuty-shaped receiver, and each service's memory. `--quick`
 * (or GPUALERT_BENCH_QUICK=1) runs a smaller one.
 */
export async function benchE2e(): Promise<void> {
  const quick = process.argv.includes('--quick') || process.env.GPUALERT_BENCH_QUICK === '1';
  // `--scale` (issue 17): a 10,000-host, 80,000-GPU fleet with 2 engines, a short backlog (12 scrapes
  // a host, 2 minutes of event time), event time sped up in the steady phase; Redis and Kafka sizes measured.
  const scale = process.argv.includes('--scale') || process.env.GPUALERT_BENCH_SCALE === '1';
  const hosts = envNumber('GPUALERT_BENCH_HOSTS', scale ? 10_000 : quick ? 125 : 1_000);
  const gpus = 8;
  const scrapes = envNumber('GPUALERT_BENCH_SCRAPES', scale ? 12 : quick ? 320 : 100); // per host, one every 10 s of event time
  const steadySeconds = scale ? 20 : quick ? 15 : 30;
  const injections = envNumber('GPUALERT_BENCH_INJECTIONS', scale ? 10 : quick ? 10 : 30);
  const backlog = hosts * scrapes;
  console.log(
    `\n## End to end: ${hosts} hosts × ${gpus} GPUs, a backlog of ${backlog.toLocaleString('en-US')} samples, separate processes, real Kafka and Redis`,
  );
  const settings =
    process.env.GPUALERT_E2E_NODE_DEFAULTS === '1'
      ? "on Node's and glibc's defaults"
      : `with the settings they ship with (MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX}; NODE_OPTIONS ${[...SERVICE_NODE_OPTIONS].map(([service, options]) => `${service} ${options}`).join(', ')})`;
  console.log(`services run ${process.env.GPUALERT_USE_DIST === '1' ? 'bundled (dist/)' : 'from source (tsx)'}, ${settings}`);

  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const redis = await ensureRedis();
  const brokers = process.env.KAFKA_BROKERS ?? broker!.brokers;
  const prefix = `e2e-${Date.now()}.`;
  const bus = new KafkaBus({ brokers: brokers.split(','), topicPrefix: prefix, partitions: 6 });
  await bus.ensureTopics(Object.values(TOPICS));
  const T0 = Date.parse('2026-06-01T00:00:00Z');
  // The fleet is made as it is published: a backlog held in memory would be gigabytes at full size.
  // The steady phase's fleet has the hosts whose agents get an Xid line besides (`xid-host-N`), on the
  // same timeline: a fault on a host in service, whose samples the engine has judged up to its time.
  const fleet = function* (start: number, minutes: number, withXidHosts: boolean) {
    for (const e of syntheticFleet({ hosts: hosts + (withXidHosts ? injections : 0), gpusPerHost: gpus, start, minutes, seed: 4 })) {
      const index = Number(e.host.slice(e.host.lastIndexOf('-') + 1));
      yield index < hosts ? e : { ...e, host: `xid-host-${index - hosts}` };
    }
  };
  /** Sample messages' sizes as published (value bytes), for Kafka's throughput and retention on paper. */
  const sizes = { count: 0, bytes: 0 };
  /** `going`: the fleet stops being made when it says so (the steady phase's 24 h of a 10,000-host fleet would take hours to make). */
  const publishFleet = async (
    publish: (messages: OutgoingMessage[]) => Promise<void>,
    start: number,
    minutes: number,
    withInventory: boolean,
    going: () => boolean = () => true,
    withXidHosts = false,
  ) => {
    let chunk: OutgoingMessage[] = [];
    let inventories: OutgoingMessage[] = [];
    for (const e of fleet(start, minutes, withXidHosts)) {
      if (!going()) return;
      if (e.type === 'host.inventory') {
        if (withInventory) inventories.push(envelopeMessage(e));
        if (inventories.length === 500) {
          await bus.publish(TOPICS.hostInventory, inventories);
          inventories = [];
        }
        continue;
      }
      if (inventories.length > 0) {
        await bus.publish(TOPICS.hostInventory, inventories);
        inventories = [];
      }
      const message = envelopeMessage(e);
      sizes.count += 1;
      sizes.bytes += Buffer.byteLength(message.value as string);
      chunk.push(message);
      if (chunk.length === 500) {
        await publish(chunk);
        chunk = [];
      }
    }
    if (inventories.length > 0) await bus.publish(TOPICS.hostInventory, inventories);
    if (chunk.length > 0) await publish(chunk);
  };
  const minutes = (scrapes * 10) / 60;
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
  writeFileSync(
    routes,
    'receivers:\n  - name: pager\n    channel: pagerduty\n    settings: { url: "env:PD_URL", routing_key: "env:PD_KEY" }\nroute:\n  receiver: pager\n  page: true\n',
  );
  const env = {
    KAFKA_BROKERS: brokers,
    REDIS_URL: redis.url,
    GPUALERT_TOPIC_PREFIX: prefix,
    GPUALERT_KEY_PREFIX: `${prefix}:`,
    GPUALERT_PARTITIONS: '6',
    GPUALERT_ROUTES: routes,
    PD_URL: `http://127.0.0.1:${pagerPort}/v2/enqueue`,
    PD_KEY: 'x'.repeat(32),
    GPUALERT_NOTIFIER_PORT: '0',
    GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
    GPUALERT_LOG_LEVEL: 'warn',
    GPUALERT_ENGINE_PORT: '0',
    GPUALERT_ENGINE_LISTEN: '127.0.0.1',
  };
  const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const watcher = kafka.consumer({ groupId: `${prefix}stages`, maxWaitTimeInMs: 10 });
  try {
    // 1. The raw ceiling: the backlog drained by a bare kafkajs consumer with the same settings.
    const raw = `${prefix}raw`;
    // A broker just started on a busy machine may not yet answer for a new topic's partitions: tried again.
    for (let attempt = 1; ; attempt += 1) {
      try {
        await admin.createTopics({ topics: [{ topic: raw, numPartitions: 6 }], waitForLeaders: true });
        break;
      } catch (error) {
        if (attempt >= 5) throw error;
        await new Promise((r) => setTimeout(r, 2_000));
      }
    }
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await publishFleet(
      async (chunk) => {
        await producer.send({ topic: raw, acks: -1, messages: chunk.map((m) => ({ key: m.key, value: m.value as string })) });
      },
      T0,
      minutes,
      false,
    );
    await producer.disconnect();
    // Three drains by three groups, the median taken: one drain swings by half on this machine.
    // Then three that JSON-parse each message and do nothing else: the ceiling of any consumer of
    // JSON envelopes on one core, whatever it then does with them.
    const drain = async (group: string, parse: boolean): Promise<number> => {
      const consumer = kafka.consumer({ groupId: `${prefix}${group}`, maxWaitTimeInMs: 25 });
      await consumer.connect();
      await consumer.subscribe({ topics: [raw], fromBeginning: true });
      let consumed = 0;
      let firstAt = 0;
      await consumer.run({
        eachBatch: async ({ batch }) => {
          if (!firstAt) firstAt = performance.now();
          if (parse) for (const message of batch.messages) JSON.parse(message.value?.toString() ?? 'null');
          consumed += batch.messages.length;
        },
      });
      await until(() => consumed >= backlog, 300_000, 'the raw consumer');
      const rate = backlog / ((performance.now() - firstAt) / 1000);
      await consumer.disconnect();
      return rate;
    };
    const rawRates: number[] = [];
    const parseRates: number[] = [];
    for (let run = 0; run < 3; run += 1) rawRates.push(await drain(`raw-${run}`, false));
    for (let run = 0; run < 3; run += 1) parseRates.push(await drain(`parse-${run}`, true));
    const rawRate = median(rawRates);
    const parseRate = median(parseRates);

    // 2. The pipeline: the same backlog on gpualert's samples topic, drained by `gpualert engine`.
    await publishFleet((chunk) => bus.publish(TOPICS.gpuSamples, chunk), T0, minutes, true);
    const judged = async (): Promise<number> => {
      const offsets = await admin.fetchOffsets({ groupId: `${prefix}gpualert-engine`, topics: [`${prefix}${TOPICS.gpuSamples}`] });
      return offsets.flatMap((t) => t.partitions).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
    };
    const published = async (): Promise<number> => (await admin.fetchTopicOffsets(`${prefix}${TOPICS.gpuSamples}`)).reduce((n, p) => n + Number(p.high), 0);
    // GPUALERT_BENCH_ENGINES=N runs N engine instances in one consumer group (default 1).
    const engines = Array.from({ length: envNumber('GPUALERT_BENCH_ENGINES', 1) }, () => start(['engine', '--clock', 'event', '--log-level', 'info'], env));
    const engine = engines[0]!;
    const notifier = start(['notifier', '--log-level', 'info'], env);
    children.push(...engines, notifier);
    let drainStart = 0;
    let drainStartCount = 0;
    await until(
      async () => {
        const n = await judged();
        if (!drainStart && n > 0) [drainStart, drainStartCount] = [performance.now(), n];
        return n >= backlog;
      },
      600_000,
      'the engine to drain the backlog',
    );
    const pipelineRate = (backlog - drainStartCount) / ((performance.now() - drainStart) / 1000);
    for (const e of engines) {
      if (e.exitCode !== null || e.signalCode !== null)
        throw new Error(`e2e bench: an engine exited (${e.exitCode ?? e.signalCode}) during the drain:\n${e.output().slice(-3_000)}`);
    }
    const engineRss = engines.reduce((mb, e) => mb + rssMb(e.pid), 0);
    const engineMemoryDrained = await memoryOf(engine, 'gpualert_engine_');

    // 3. Steady load: the fleet's next scrapes offered at 40% of the drained rate (event time
    // running that many times faster than real time), lag sampled, Xid 79 pages timed meanwhile.
    const offered = Math.max(hosts / 10, pipelineRate * 0.4);
    const speedup = offered / (hosts / 10);
    let steady = true;
    const lags: number[] = [];
    const load = (async () => {
      const begun = performance.now();
      let sent = 0;
      await publishFleet(
        async (chunk) => {
          if (!steady) return;
          const due = begun + ((sent + chunk.length) / offered) * 1000;
          if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
          await bus.publish(TOPICS.gpuSamples, chunk);
          sent += chunk.length;
        },
        T0 + scrapes * 10_000,
        24 * 60,
        false,
        () => steady,
        true,
      );
    })();
    // A failure elsewhere closes the bus under the load: its error is the one said, not this one's.
    load.catch(() => undefined);
    const sampler = setInterval(() => {
      void Promise.all([published(), judged()])
        .then(([p, j]) => lags.push(p - j))
        .catch(() => {});
    }, 500);
    // Where an Xid's time goes: when its kernel event and its alert were read back from Kafka (a
    // watcher's own fetch adds up to its 10 ms wait), beside when its page came.
    const stages = { event: new Map<string, number>(), alert: new Map<string, number>() };
    await watcher.connect();
    await watcher.subscribe({ topics: [`${prefix}${TOPICS.kernelEvents}`, `${prefix}${TOPICS.alerts}`], fromBeginning: false });
    const joined = new Promise<void>((r) => watcher.on(watcher.events.GROUP_JOIN, () => r()));
    await watcher.run({
      eachMessage: async ({ topic, message }) => {
        const at = performance.now();
        const e = JSON.parse(message.value?.toString() ?? '{}') as { host?: string; data?: { status?: string } };
        if (!e.host?.startsWith('xid-host-')) return;
        const seen = topic.endsWith(TOPICS.kernelEvents) ? stages.event : e.data?.status === 'firing' ? stages.alert : undefined;
        if (seen && !seen.has(e.host)) seen.set(e.host, at);
      },
    });
    await joined;
    const injected = new Map<string, number>();
    const latencies: number[] = [];
    const agentRss: number[] = [];
    const smi = new FakeNvidiaSmi();
    const steadyStarted = performance.now();
    for (let i = 0; i < injections; i += 1) {
      // Each injection a different host of the kernel log's view: a distinct fault, a distinct page.
      const host = `xid-host-${i}`;
      writeFileSync(join(dir, `${host}.log`), '');
      // The host's whole agent, as a GPU host runs it (issue 34): its GPUs from a stand-in nvidia-smi, its kernel log from the file.
      const c = start(
        [
          'agent',
          '--host',
          host,
          '--nvidia-smi',
          smi.path,
          '--kernel-source',
          'file',
          '--kernel-file',
          join(dir, `${host}.log`),
          '--metadata',
          'none',
          '--port',
          '0',
          '--listen',
          '127.0.0.1',
          '--log-level',
          'info',
        ],
        env,
      );
      children.push(c);
      await until(() => c.output().includes('agent_started'), 60_000, `the agent of ${host}`);
      // A fault on a host in service: dated at the time of the host's latest sample the engine has
      // judged (event time, as its samples are; the engine's history of its GPU 0 says when), as
      // `dmesg --time-format iso` writes it. A fault dated past its host's judged samples waits for
      // them first (fast-lane.ts): with event time running hundreds of times faster than real
      // time, a line dated by the wall clock would measure that wait, not the fault's lane.
      const latestJudged = async (e: BenchProcess): Promise<string | undefined> => {
        const answer = await fetch(`http://127.0.0.1:${e.port()}/v1/fleet/${host}/0/history`).catch(() => undefined);
        const history = answer?.ok ? ((await answer.json()) as { at: string[] }) : (await answer?.arrayBuffer(), undefined);
        return history?.at.at(-1);
      };
      let hostTime: string | undefined;
      await until(
        async () => (hostTime = (await Promise.all(engines.map(latestJudged))).find((at) => at !== undefined)) !== undefined,
        60_000,
        `the samples of ${host} judged`,
      );
      const stamp = new Date(hostTime!).toISOString().replace('.', ',').replace('Z', '000+00:00');
      const t0 = performance.now();
      injected.set(host, t0);
      appendFileSync(join(dir, `${host}.log`), `${stamp} NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n`);
      await until(() => pages.has(host), 30_000, `the page for ${host}`).catch(() => {});
      if (pages.has(host)) latencies.push(pages.get(host)! - t0);
      agentRss.push(rssMb(c.pid));
      c.kill('SIGTERM');
    }
    const remaining = steadySeconds * 1000 - (performance.now() - steadyStarted);
    if (remaining > 0) await new Promise((r) => setTimeout(r, remaining));
    const notifierRss = rssMb(notifier.pid);
    const engineRssSteady = engines.map((e) => rssMb(e.pid));
    const notifierRssPeak = rssMb(notifier.pid, 'VmHWM');
    const engineRssPeak = engines.map((e) => rssMb(e.pid, 'VmHWM'));
    const [engineMemorySteady, notifierMemory] = [await memoryOf(engine, 'gpualert_engine_'), await memoryOf(notifier, 'gpualert_notifier_')];
    steady = false;
    clearInterval(sampler);
    await load;
    await watcher.disconnect();
    const stage = (seen: Map<string, number>) => [...seen].map(([host, at]) => at - injected.get(host)!);
    const [toEvent, toAlert] = [stage(stages.event), stage(stages.alert)];
    const perThousand = (mb: number) => mb / ((hosts * gpus) / 1_000);
    const tail = lags.slice(-Math.max(1, Math.floor(lags.length / 4)));
    console.log(
      `${'raw ceiling: the backlog drained by a bare kafkajs consumer'.padEnd(58)} ${format(rawRate).padStart(12)} msgs/s (median of 3; min ${format(Math.min(...rawRates))}, max ${format(Math.max(...rawRates))})`,
    );
    console.log(
      `${"JSON ceiling: the same drain, each message JSON.parse'd".padEnd(58)} ${format(parseRate).padStart(12)} msgs/s (${format(parseRate / rawRate)} of raw; min ${format(Math.min(...parseRates))}, max ${format(Math.max(...parseRates))})`,
    );
    console.log(
      `${`pipeline: the backlog judged by ${engines.length} gpualert engine${engines.length > 1 ? 's' : ''}`.padEnd(58)} ${format(pipelineRate * gpus).padStart(12)} GPU samples/s (${format(pipelineRate)} msgs/s, ${format(pipelineRate / rawRate)} of raw)`,
    );
    console.log(
      `${'steady load offered (event time sped up)'.padEnd(58)} ${format(offered).padStart(12)} msgs/s (${format(speedup)}× real time); lag max ${format(Math.max(0, ...lags))}, last quarter max ${format(Math.max(0, ...tail))} msgs`,
    );
    console.log(
      `${'Xid 79 line → page, host in service, under that load'.padEnd(58)} p50 ${format(median(latencies))} ms, p99 ${format(percentile(latencies, 99))} ms (${latencies.length}/${injections})`,
    );
    console.log(
      `${'  of which: line → its kernel event read from Kafka'.padEnd(58)} p50 ${format(median(toEvent))} ms, p99 ${format(percentile(toEvent, 99))} ms (${toEvent.length})`,
    );
    console.log(
      `${'  line → its alert read from Kafka'.padEnd(58)} p50 ${format(median(toAlert))} ms, p99 ${format(percentile(toAlert, 99))} ms (${toAlert.length})`,
    );
    console.log(
      `${'engine RSS per 1,000 GPUs, after the drain'.padEnd(58)} ${format(perThousand(engineRss)).padStart(12)} MB (${format(engineRss)} MB for ${hosts * gpus} GPUs)`,
    );
    console.log(`${'notifier RSS'.padEnd(58)} ${format(notifierRss).padStart(12)} MB`);
    console.log(`${'agent RSS (one per host, just after its page), median'.padEnd(58)} ${format(median(agentRss)).padStart(12)} MB`);
    console.log(`${'engine RSS per instance at the end of the steady load'.padEnd(58)} ${engineRssSteady.map((mb) => format(mb)).join(' + ')} MB`);
    console.log(
      `${'peak RSS (VmHWM) per engine instance, and the notifier'.padEnd(58)} ${engineRssPeak.map((mb) => format(mb)).join(' + ')} MB, ${format(notifierRssPeak)} MB`,
    );
    console.log(`${'engine memory after the drain (its /metrics), MB'.padEnd(58)} ${memoryLine(engineMemoryDrained)}`);
    console.log(`${'engine memory at the end of the steady load, MB'.padEnd(58)} ${memoryLine(engineMemorySteady)}`);
    console.log(`${'notifier memory at the end of the steady load, MB'.padEnd(58)} ${memoryLine(notifierMemory)}`);
    console.log(
      `${'gpu.sample message (8 GPUs), as published'.padEnd(58)} ${format(sizes.bytes / Math.max(1, sizes.count)).padStart(12)} bytes (mean of ${sizes.count.toLocaleString('en-US')})`,
    );
    const footprint = await redisFootprint(redis.url, `${prefix}:`);
    for (const [kind, { keys, bytes }] of [...footprint.kinds].sort((a, b) => b[1].bytes - a[1].bytes)) {
      console.log(
        `${`redis ${kind}`.padEnd(58)} ${format(bytes / 1e6).padStart(12)} MB in ${keys.toLocaleString('en-US')} keys (${format(bytes / keys)} bytes a key)`,
      );
    }
    const hostKeys = footprint.kinds.get('engine:host:*');
    if (hostKeys)
      console.log(
        `${'engine state per host, stored JSON'.padEnd(58)} ${format(median(footprint.hostStateChars)).padStart(12)} chars median, ${format(Math.max(...footprint.hostStateChars))} max (${format(hostKeys.bytes / hostKeys.keys)} bytes a key in Redis)`,
      );
    console.log(
      JSON.stringify({
        pipeline_gpu_samples_per_s: Math.round(pipelineRate * gpus),
        raw_consume_msgs_per_s: Math.round(rawRate),
        pipeline_vs_raw: Math.round((pipelineRate / rawRate) * 1000) / 1000,
        json_parse_msgs_per_s: Math.round(parseRate),
        json_parse_vs_raw: Math.round((parseRate / rawRate) * 1000) / 1000,
        pipeline_vs_json_parse: Math.round((pipelineRate / parseRate) * 1000) / 1000,
        xid_to_page_p50_ms: Math.round(median(latencies)),
        xid_to_page_p99_ms: Math.round(percentile(latencies, 99)),
        xid_to_event_p50_ms: Math.round(median(toEvent)),
        xid_to_event_p99_ms: Math.round(percentile(toEvent, 99)),
        xid_to_alert_p50_ms: Math.round(median(toAlert)),
        xid_to_alert_p99_ms: Math.round(percentile(toAlert, 99)),
        engine_rss_mb_per_1000_gpus: Math.round(perThousand(engineRss) * 10) / 10,
        engine_rss_mb_steady: engineRssSteady.map((mb) => Math.round(mb)),
        notifier_rss_mb: Math.round(notifierRss),
        engine_rss_mb_peak: engineRssPeak.map((mb) => Math.round(mb)),
        notifier_rss_mb_peak: Math.round(notifierRssPeak),
        agent_rss_mb_median: Math.round(median(agentRss)),
        engine_memory_mb_drained: engineMemoryDrained ?? null,
        engine_memory_mb_steady: engineMemorySteady ?? null,
        notifier_memory_mb: notifierMemory ?? null,
        hosts,
        gpus: hosts * gpus,
        engines: engines.length,
        sample_message_bytes: Math.round(sizes.bytes / Math.max(1, sizes.count)),
        lag_max_msgs: Math.max(0, ...lags),
      }),
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    pager.close();
    await watcher.disconnect();
    await admin.disconnect();
    await bus.close();
    await broker?.destroy();
    await redis.stop();
  }
}
