import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { envelopeMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { emptyMetrics } from '@gpualert/gpu-metrics';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { memoryLine, memoryOf, shippedEnv, startProcess, until, type BenchProcess } from './harness.ts';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';

/**
 * What the notifier costs while the fleet's samples stream past it (issue 34: the paging path does
 * only paging): `gpualert engine` and `gpualert notifier` apart, on Kafka, a fleet of HOSTS × 8
 * GPUs publishing samples at a fixed rate for SECONDS; the notifier's RSS at the end and its CPU
 * seconds (utime + stime) over the stream, from /proc. Then FIRING alerts fire (warnings, one a
 * GPU, grouped by host as the embedded routes do) and its RSS is read again once its API lists them
 * all, with where that memory is (its /metrics). The services run with the settings they ship with
 * (tools/service-env.ts). GPUALERT_BENCH_BIN=path/to/gpualert.mjs
 * runs another checkout's build (to compare before and after); GPUALERT_BENCH_NOTIFIER_NODE_ARGS gives
 * the notifier Node's flags. Needs REDIS_URL.
 */
const BIN = process.env.GPUALERT_BENCH_BIN ?? resolve(import.meta.dirname, '../bin/gpualert.mjs');
const HOSTS = Number(process.env.GPUALERT_BENCH_HOSTS ?? 250);
const SECONDS = Number(process.env.GPUALERT_BENCH_SECONDS ?? 30);
/** Firing alerts held at the end (issue 34's goal: the notifier within 120 MB with 10,000). */
const FIRING = Number(process.env.GPUALERT_BENCH_FIRING ?? 10_000);
/** Each host's samples per second: 250 hosts × 8 GPUs at 4/s is 8,000 GPU samples/s. */
const PER_HOST_PER_SECOND = Number(process.env.GPUALERT_BENCH_RATE ?? 4);

/** Node's flags for the notifier alone, to try one (GPUALERT_BENCH_NOTIFIER_NODE_ARGS="--flag --other"). */
const NOTIFIER_NODE_ARGS = (process.env.GPUALERT_BENCH_NOTIFIER_NODE_ARGS ?? '').split(' ').filter(Boolean);

function start(args: string[], env: NodeJS.ProcessEnv): BenchProcess {
  return startProcess(BIN, args[0] === 'notifier' ? NOTIFIER_NODE_ARGS : [], args, { ...shippedEnv(args[0]), ...env });
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
}

/** utime + stime of a process, in seconds (clock ticks of 1/100 s on Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export async function benchNotifierFootprint(): Promise<void> {
  if (!process.env.REDIS_URL) throw new Error('notifier-footprint bench: set REDIS_URL');
  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const brokers = process.env.KAFKA_BROKERS ?? broker!.brokers;
  const prefix = `bench-footprint-${Date.now()}.`;
  const bus = new KafkaBus({ brokers: brokers.split(','), topicPrefix: prefix, partitions: 3 });
  const children: ChildProcess[] = [];
  try {
    await bus.ensureTopics(Object.values(TOPICS));
    const env = {
      KAFKA_BROKERS: brokers,
      GPUALERT_TOPIC_PREFIX: prefix,
      GPUALERT_KEY_PREFIX: prefix,
      GPUALERT_PARTITIONS: '3',
      GPUALERT_ENGINE_PORT: '0',
      GPUALERT_NOTIFIER_PORT: '0',
      GPUALERT_NOTIFIER_TOKEN: 'bench-footprint-token-0123',
      GPUALERT_LOG_FORMAT: 'json',
      GPUALERT_ROUTES: resolve(import.meta.dirname, '../rules/routes.embedded.yaml'),
    };
    const engine = start(['engine'], env);
    children.push(engine);
    await until(() => /engine_started/.test(engine.output()), 120_000, 'the engine');
    const port = /"metrics_port":(\d+)/.exec(engine.output())?.[1];
    const notifier = start(['notifier'], { ...env, GPUALERT_NOTIFIER_ENGINES: `http://127.0.0.1:${port}` });
    children.push(notifier);
    await until(() => /notifier_listening/.test(notifier.output()), 120_000, 'the notifier');
    await new Promise((r) => setTimeout(r, 5_000)); // the groups settle
    const pid = notifier.pid!;
    const rssBefore = rssMb(pid);
    const cpuBefore = cpuSeconds(pid);
    const started = performance.now();
    let sent = 0;
    for (let second = 0; second < SECONDS; second += 1) {
      for (let tick = 0; tick < PER_HOST_PER_SECOND; tick += 1) {
        const ts = new Date().toISOString();
        await bus.publish(
          TOPICS.gpuSamples,
          Array.from({ length: HOSTS }, (_, h) =>
            envelopeMessage(
              newEnvelope({
                type: 'gpu.sample',
                host: `fp-node-${String(h).padStart(4, '0')}`,
                source: 'bench',
                ts,
                labels: {},
                data: { gpus: Array.from({ length: 8 }, (_, i) => ({ ...emptyMetrics(i), util_pct: 90, temp_c: 60 + (i % 4), power_w: 500 })) },
              }),
            ),
          ),
        );
        sent += HOSTS * 8;
      }
      const wait = started + (second + 1) * 1000 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(pid) - cpuBefore;
    const rss = rssMb(pid);

    // FIRING alerts fire: one a GPU, 8 a host, warnings (no page), each host a group of the embedded routes.
    const firingStarted = performance.now();
    for (let from = 0; from < FIRING; from += 500) {
      await bus.publish(
        TOPICS.alerts,
        Array.from({ length: Math.min(500, FIRING - from) }, (_, k) => {
          const i = from + k;
          const host = `fp-node-${String(Math.floor(i / 8)).padStart(4, '0')}`;
          return envelopeMessage(
            newEnvelope({
              type: 'alert',
              host,
              source: 'bench',
              labels: { cluster: 'lab' },
              data: {
                fingerprint: `footprint-${i}`,
                status: 'firing',
                severity: 'warning',
                category: 'thermal',
                rule: 'gpu-temp',
                summary: `GPU ${i % 8} on ${host} is 12 °C over its own normal`,
                starts_at: new Date().toISOString(),
                evidence: [],
              },
            }),
          );
        }),
      );
    }
    const api = `http://127.0.0.1:${notifier.port()}`;
    /** The alerts its API lists, all or those of a filter (`fingerprint="…"`). */
    const listed = async (filter?: string) => {
      const query = filter === undefined ? '' : `?filter=${encodeURIComponent(filter)}`;
      const response = await fetch(`${api}/api/v2/alerts${query}`, { headers: { authorization: `Bearer ${env.GPUALERT_NOTIFIER_TOKEN}` } }).catch(
        () => undefined,
      );
      return response?.ok ? ((await response.json()) as unknown[]).length : 0;
    };
    // Asked after the last alert each second (a list of all 10,000 each second is itself most of
    // what the notifier would allocate), then once for all of them after RSS is read.
    const last = `fingerprint="footprint-${FIRING - 1}"`;
    while ((await listed(last)) === 0 && performance.now() - firingStarted < 300_000) await new Promise((r) => setTimeout(r, 1_000));
    const holdSeconds = (performance.now() - firingStarted) / 1000;
    await new Promise((r) => setTimeout(r, 6_000)); // past group_wait: every group has sent
    const rssFiring = rssMb(pid);
    const memory = await memoryOf(notifier, 'gpualert_notifier_');
    const held = await listed();
    console.log(`notifier while ${Math.round(sent / seconds)} GPU samples/s stream past (${HOSTS} hosts × 8 GPUs, ${Math.round(seconds)} s; ${BIN})`);
    console.log(`${'notifier CPU, share of one core'.padEnd(40)} ${((cpu / seconds) * 100).toFixed(1).padStart(8)} %`);
    console.log(`${'notifier RSS, before → after the stream'.padEnd(40)} ${rssBefore.toFixed(0).padStart(8)} → ${rss.toFixed(0)} MB`);
    console.log(
      `${`notifier RSS with ${held.toLocaleString('en-US')} firing alerts`.padEnd(40)} ${rssFiring.toFixed(0).padStart(8)} MB (the last held ${Math.round(holdSeconds)} s after the first was sent)`,
    );
    console.log(`${'  where it is, MB'.padEnd(40)} ${memoryLine(memory)}`);
    console.log(
      JSON.stringify({
        bench: 'notifier-footprint',
        gpu_samples_per_s: Math.round(sent / seconds),
        notifier_cpu_pct: Math.round((cpu / seconds) * 1000) / 10,
        notifier_rss_mb: Math.round(rss),
        firing_alerts: held,
        notifier_rss_mb_firing: Math.round(rssFiring),
        notifier_memory_mb_firing: memory ?? null,
      }),
    );
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await bus.close();
    await broker?.stop();
  }
}
