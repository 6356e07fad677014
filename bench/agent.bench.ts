import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FakeNvidiaSmi } from '../test/infra/fake-nvidia-smi.ts';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { serviceEnv } from '../tools/service-env.ts';
import { median } from './harness.ts';

const ROOT = resolve(import.meta.dirname, '..');
const TICKS_PER_S = 100; // USER_HZ on Linux

function cpuTicks(pid: number): number {
  // utime and stime are fields 14 and 15; the command name (field 2) may hold spaces, so count after ')'
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
}

/** An 8-GPU host as the fake nvidia-smi prints it. */
function eightGpus(smi: FakeNvidiaSmi): void {
  const rows = Array.from({ length: 8 }, (_, i) => {
    const bus = (0x18 + i * 0x10).toString(16).toUpperCase().padStart(2, '0');
    return { i, bus, row: `${i}, GPU-${i}aaa, NVIDIA H100 80GB HBM3, 00000000:${bus}:00.0, 97, 61, 650.50, 0x0000000000000000` };
  });
  smi.file('rows.csv', `${rows.map((r) => r.row).join('\n')}\n`);
  smi.file('buses.csv', `${rows.map((r) => `${r.i}, 00000000:${r.bus}:00.0`).join('\n')}\n`);
  smi.file(
    'inventory.csv',
    `${rows.map((r) => `${r.i}, GPU-${r.i}aaa, 00000000:${r.bus}:00.0, NVIDIA H100 80GB HBM3, 16501234567${r.i}, 96.00.89.00.01, 550.54.15`).join('\n')}\n`,
  );
}

/**
 * `gpualert agent` as a GPU host runs it: built (dist/), on Kafka, scraping an 8-GPU host every
 * 10 s through the fake nvidia-smi and following a kernel log: as shipped (tools/service-env.ts),
 * the bundle on Node's defaults, and the checkout through tsx. A REDIS_URL in the bench's own
 * environment reaches the agent, as the shipped units and DaemonSet give it one (its kernel
 * collector keeps its place there, and Redis's client loads); without it the agent runs without
 * Redis. Reports start-up time (to `agent_started`), resident memory and CPU over the window (the
 * agent's own, not nvidia-smi's).
 * GPUALERT_BENCH_AGENT_S sets the window (default 60 s).
 */
export async function benchAgent(): Promise<void> {
  const windowS = Number(process.env.GPUALERT_BENCH_AGENT_S ?? 60);
  if (!(windowS > 0)) throw new Error('GPUALERT_BENCH_AGENT_S: expected a positive number of seconds');
  if (!existsSync(join(ROOT, 'dist/gpualert.mjs')) || process.env.GPUALERT_BENCH_REBUILD !== '0') {
    const built = spawnSync(process.execPath, [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(ROOT, 'tools/build.ts')], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const brokers = process.env.KAFKA_BROKERS ?? broker!.brokers;
  const smi = new FakeNvidiaSmi();
  eightGpus(smi);
  const kernelLog = join(mkdtempSync(join(tmpdir(), 'gpualert-agent-bench-')), 'kern.log');
  writeFileSync(kernelLog, '');
  const results: Record<string, Record<string, number>> = {};
  try {
    for (const [mode, entry, shipped] of [
      ['as shipped', join(ROOT, 'dist/gpualert.mjs'), serviceEnv('agent')],
      ['built (dist/)', join(ROOT, 'dist/gpualert.mjs'), {}],
      ['checkout (tsx)', join(ROOT, 'bin/gpualert.mjs'), {}],
    ] as const) {
      const started = performance.now();
      const agent: ChildProcess = spawn(
        process.execPath,
        [
          entry,
          'agent',
          '--host',
          'bench-host',
          '--nvidia-smi',
          smi.path,
          '--gpu-interval',
          '10s',
          '--kernel-source',
          'file',
          '--kernel-file',
          kernelLog,
          '--metadata',
          'none',
          '--port',
          '0',
          '--listen',
          '127.0.0.1',
          '--log-format',
          'json',
        ],
        {
          env: { ...process.env, ...shipped, KAFKA_BROKERS: brokers, GPUALERT_TOPIC_PREFIX: `bench-agent-${Date.now()}.` },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let output = '';
      agent.stderr!.on('data', (c: Buffer) => (output += c.toString()));
      while (!output.includes('"msg":"agent_started"')) {
        if (agent.exitCode !== null) throw new Error(`agent exited: ${output.slice(-500)}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      const startMs = performance.now() - started;
      // Let the first scrapes and the producer's connection settle, then measure a steady window.
      await new Promise((r) => setTimeout(r, 15_000));
      const ticks0 = cpuTicks(agent.pid!);
      const rss: number[] = [];
      const windowStarted = performance.now();
      while (performance.now() - windowStarted < windowS * 1000) {
        await new Promise((r) => setTimeout(r, 1_000));
        rss.push(rssMb(agent.pid!));
      }
      const cpuS = (cpuTicks(agent.pid!) - ticks0) / TICKS_PER_S;
      const wallS = (performance.now() - windowStarted) / 1000;
      agent.kill('SIGTERM');
      await once(agent, 'exit');
      results[mode] = {
        start_ms: Math.round(startMs),
        rss_mb_median: Math.round(median(rss) * 10) / 10,
        rss_mb_max: Math.round(Math.max(...rss) * 10) / 10,
        cpu_pct_of_one_core: Math.round((cpuS / wallS) * 1000) / 10,
      };
      const r = results[mode]!;
      console.log(
        `agent ${mode.padEnd(15)} 8 GPUs @ 10 s: start ${r.start_ms} ms, RSS median ${r.rss_mb_median} MB (max ${r.rss_mb_max}), CPU ${r.cpu_pct_of_one_core}% of one core over ${windowS} s`,
      );
    }
  } finally {
    await broker?.destroy();
  }
  console.log(JSON.stringify({ bench: 'agent', window_s: windowS, ...results }));
}
