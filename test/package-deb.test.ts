import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { type Bus, type Subscription } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { TOPICS, type Envelope } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AGENT_NODE_OPTIONS, buildDeb, DEB_PACKAGE } from '../tools/build-deb.ts';
import { FakeNvidiaSmi } from './infra/fake-nvidia-smi.ts';
import { cleanEnv } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

/** Eight H100s, as the fake nvidia-smi answers for them. */
function eightGpus(smi: FakeNvidiaSmi): void {
  const bus = (i: number) => `00000000:${(0x18 + i * 0x11).toString(16).toUpperCase().padStart(2, '0')}:00.0`;
  const gpus = Array.from({ length: 8 }, (_, i) => i);
  smi.file('rows.csv', gpus.map((i) => `${i}, GPU-${i}aaa, NVIDIA H100 80GB HBM3, ${bus(i)}, 90, 60, 600.00, 0x0000000000000000\n`).join(''));
  smi.file('buses.csv', gpus.map((i) => `${i}, ${bus(i)}\n`).join(''));
  smi.file('apps.csv', '');
  smi.file('inventory.csv', gpus.map((i) => `${i}, GPU-${i}aaa, ${bus(i)}, NVIDIA H100 80GB HBM3, 16501234567${i}0, 96.00.89.00.01, 550.54.15\n`).join(''));
}

/**
 * Resident memory, its peak, and CPU seconds so far, as the kernel counts them for `pid`. RSS in
 * two parts: anonymous (the heap and what else is the process's own) and file-backed (pages of the
 * 120 MiB executable it has touched: clean, shared, given back under memory pressure).
 */
function usage(pid: number): { rssMiB: number; anonMiB: number; fileMiB: number; peakMiB: number; cpuS: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  // Fields 14 and 15 of /proc/PID/stat (after the command's parenthesised name): user and system time in clock ticks.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  const hz = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  return { rssMiB: kib('VmRSS') / 1024, anonMiB: kib('RssAnon') / 1024, fileMiB: kib('RssFile') / 1024, peakMiB: kib('VmHWM') / 1024, cpuS: ticks / hz };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The agent's flags for these runs: the fake GPUs, no kernel log or metadata service, its port on loopback. */
function onEightGpus(host: string, smi: FakeNvidiaSmi): string[] {
  eightGpus(smi);
  return [
    '--host',
    host,
    '--nvidia-smi',
    smi.path,
    '--kernel-source',
    'none',
    '--metadata',
    'none',
    '--port',
    '0',
    '--listen',
    '127.0.0.1',
    '--log-format',
    'json',
  ];
}

describe('the gpualert-agent Debian package', () => {
  let deb = '';
  let installedKiB = 0;
  const root = mkdtempSync(join(tmpdir(), 'gpualert-deb-'));
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    ({ deb, installedKiB } = await buildDeb());
    const unpack = spawnSync('dpkg-deb', ['-x', deb, root], { encoding: 'utf8' });
    expect(unpack.status, unpack.stderr).toBe(0);
  }, 240_000);
  afterAll(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    }
    rmSync(root, { recursive: true, force: true });
  });

  /** The packaged executable, run as the unit would run it (its settings in the environment). */
  function agent(args: readonly string[], env: NodeJS.ProcessEnv): ChildProcess & { output: () => string; startedAt: number } {
    const startedAt = performance.now();
    const child = spawn(join(root, 'usr/bin/gpualert'), ['agent', ...args], {
      env: cleanEnv({ NODE_OPTIONS: AGENT_NODE_OPTIONS, ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    return Object.assign(child, { output: () => output, startedAt });
  }

  it('holds one executable, the unit, its settings as a conffile and a man page; the unit passes systemd-analyze verify', () => {
    const contents = spawnSync('dpkg-deb', ['--contents', deb], { encoding: 'utf8' }).stdout;
    for (const file of [
      './usr/bin/gpualert',
      './lib/systemd/system/gpualert-agent.service',
      './etc/gpualert/gpualert-agent.env',
      './usr/share/man/man1/gpualert-agent.1.gz',
    ]) {
      expect(contents).toContain(file);
    }
    const control = spawnSync('dpkg-deb', ['--field', deb], { encoding: 'utf8' }).stdout;
    expect(control).toMatch(new RegExp(`^Package: ${DEB_PACKAGE}$`, 'm'));
    expect(control).toMatch(/^Installed-Size: \d+$/m);
    const conffiles = spawnSync('sh', ['-c', `dpkg-deb --ctrl-tarfile '${deb}' | tar -xO ./conffiles`], { encoding: 'utf8' }).stdout;
    expect(conffiles.trim()).toBe('/etc/gpualert/gpualert-agent.env');
    // The settings file may come to hold a broker's credentials: root's alone.
    expect(statSync(join(root, 'etc/gpualert/gpualert-agent.env')).mode & 0o777).toBe(0o600);

    const unit = readFileSync(join(root, 'lib/systemd/system/gpualert-agent.service'), 'utf8');
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/gpualert agent /m);
    expect(unit).toContain(`Environment=NODE_OPTIONS=${AGENT_NODE_OPTIONS}`);
    // verify in a root with the system's own units, as on a host with the package installed.
    const system = mkdtempSync(join(tmpdir(), 'gpualert-deb-verify-'));
    try {
      cpSync(root, system, { recursive: true });
      mkdirSync(join(system, 'usr/lib/systemd'), { recursive: true });
      cpSync('/usr/lib/systemd/system', join(system, 'usr/lib/systemd/system'), { recursive: true });
      const run = spawnSync('systemd-analyze', ['verify', '--man=no', `--root=${system}`, join(system, 'lib/systemd/system/gpualert-agent.service')], {
        encoding: 'utf8',
      });
      expect(run.stdout + run.stderr).toBe('');
      expect(run.status).toBe(0);
    } finally {
      rmSync(system, { recursive: true, force: true });
    }
  });

  it('its executable is the agent alone: no other command, nor their code (the engine, the notifier, the Kubernetes client)', () => {
    const exe = join(root, 'usr/bin/gpualert');
    const help = spawnSync(exe, ['--help'], { encoding: 'utf8' }).stdout;
    expect([...help.matchAll(/^ {2}(\w[\w-]*)/gm)].map((m) => m[1])).toEqual(['agent', 'help']);
    const engine = spawnSync(exe, ['engine'], { encoding: 'utf8' });
    expect(engine.status).toBe(2);
    expect(engine.stderr).toMatch(/unknown command 'engine'/);
    // The script inside carries none of their code: strings each of them holds, all present in the
    // whole command line's bundle (npm run build:sea), are absent from this one.
    const bytes = readFileSync(exe);
    expect(bytes.includes('kafkajs')).toBe(true); // the check can see the bundle's text
    for (const absent of ['@kubernetes/client-node', 'gpualert.io/quarantine', 'nodemailer', 'gpualert_notifier_', 'gpualert_engine_']) {
      expect(bytes.includes(absent), absent).toBe(false);
    }
  });

  it("its man page names every option of the agent's --help", () => {
    const page = gunzipSync(readFileSync(join(root, 'usr/share/man/man1/gpualert-agent.1.gz'))).toString('utf8');
    expect(page).toMatch(/^\.TH GPUALERT\\-AGENT 1 /);
    const help = spawnSync(join(root, 'usr/bin/gpualert'), ['agent', '--help'], { encoding: 'utf8' }).stdout;
    const flags = [...help.matchAll(/^ {2}(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1] ?? '');
    expect(flags.length).toBeGreaterThan(15);
    for (const flag of flags) expect(page, flag).toContain(flag.replace(/-/g, '\\-'));
  });

  it('the packaged executable runs the agent on 8 GPUs against a real Kafka: samples and the inventory published, /healthz up; measured', async () => {
    const prefix = `${uniqueName('deb')}.`;
    const bus: Bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    const seen: Envelope[] = [];
    let firstSampleAt = 0;
    const sub: Subscription = await bus.consume({
      group: uniqueName('deb-reader'),
      topics: [TOPICS.gpuSamples, TOPICS.hostInventory],
      handler: async (batch) => {
        for (const { envelope } of batch.items) {
          if (envelope.type === 'gpu.sample' && firstSampleAt === 0) firstSampleAt = performance.now();
          seen.push(envelope);
        }
      },
    });
    const smi = new FakeNvidiaSmi();
    try {
      const run = agent(onEightGpus('deb-host-1', smi), {
        KAFKA_BROKERS: inject('kafkaBrokers'),
        GPUALERT_TOPIC_PREFIX: prefix,
      });
      await waitFor(() => run.output().includes('"msg":"agent_started"') || run.exitCode !== null, 'agent_started', 30_000);
      const startMs = performance.now() - run.startedAt;
      expect(run.exitCode, run.output().slice(-2000)).toBeNull();
      const port = Number(
        /"port":(\d+)/.exec(
          run
            .output()
            .split('\n')
            .find((l) => l.includes('agent_started')) ?? '',
        )?.[1],
      );
      await waitFor(
        () => seen.some((e) => e.type === 'gpu.sample') && seen.some((e) => e.type === 'host.inventory'),
        'a sample and the inventory on Kafka',
        30_000,
      );
      const sample = seen.find((e) => e.type === 'gpu.sample');
      expect(sample).toMatchObject({ host: 'deb-host-1' });
      expect(sample?.type === 'gpu.sample' ? sample.data.gpus.length : 0).toBe(8);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, '/healthz 200', 30_000);
      // Steady state at the default 10 s interval: CPU over 20 s, then the memory it holds.
      const pid = run.pid ?? 0;
      const before = usage(pid);
      await pause(20_000);
      const after = usage(pid);
      const cpuShare = (after.cpuS - before.cpuS) / 20;
      console.log(
        `[package] ${DEB_PACKAGE}: installed ${(installedKiB / 1024).toFixed(1)} MiB, .deb ${(statSync(deb).size / 1024 / 1024).toFixed(1)} MiB; agent on 8 GPUs, topics present: agent_started ${startMs.toFixed(0)} ms after exec, first sample on Kafka ${(firstSampleAt - run.startedAt).toFixed(0)} ms; RSS ${after.rssMiB.toFixed(1)} MiB (anonymous ${after.anonMiB.toFixed(1)}, file-backed ${after.fileMiB.toFixed(1)}; peak ${after.peakMiB.toFixed(1)}); CPU ${(cpuShare * 100).toFixed(2)} % of a core over 20 s`,
      );
      run.kill('SIGTERM');
      const [code] = await once(run, 'exit');
      expect(code).toBe(0);
    } finally {
      await sub.stop();
      await bus.close();
    }
  });

  it('with its topics missing, the packaged agent says so at start and still stops within its limit; measured', async () => {
    const smi = new FakeNvidiaSmi();
    const run = agent(onEightGpus('deb-host-2', smi), {
      KAFKA_BROKERS: inject('kafkaBrokers'),
      GPUALERT_TOPIC_PREFIX: `${uniqueName('deb-missing')}.`,
    });
    await waitFor(() => run.output().includes('"msg":"topics_missing"') || run.exitCode !== null, 'the missing topics said', 30_000);
    expect(run.exitCode, run.output().slice(-2000)).toBeNull();
    await pause(10_000);
    const held = usage(run.pid ?? 0);
    const asked = Date.now();
    run.kill('SIGTERM');
    const [code] = await once(run, 'exit');
    console.log(
      `[package] agent with its topics missing: RSS ${held.rssMiB.toFixed(1)} MiB (anonymous ${held.anonMiB.toFixed(1)}, file-backed ${held.fileMiB.toFixed(1)}; peak ${held.peakMiB.toFixed(1)}) after 10 s; stopped ${Date.now() - asked} ms after SIGTERM, exit ${String(code)}`,
    );
    expect(code === 0 || code === 1, `exit ${String(code)}`).toBe(true);
    expect(existsSync(join(root, 'usr/bin/gpualert'))).toBe(true);
  });
});
