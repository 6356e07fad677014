import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Debian's Slurm 22.05 and MUNGE, unpacked (`apt-get download` + `dpkg -x`, nothing installed)
 * into `~/.cache/gpualert/debian/slurm-<version>`, with the libraries a minimal Debian lacks.
 * Called by tools/provision.ts before the tests, and by the tests to find it.
 */
export const SLURM_PACKAGES = [
  'slurmctld',
  'slurmd',
  'slurm-client',
  'slurm-wlm-basic-plugins',
  'munge',
  'libmunge2',
  'libhwloc15',
  'liblua5.1-0',
  'libnuma1',
  'libjson-c5',
  'libyaml-0-2',
  'libdbus-1-3',
  'liblz4-1',
  'libreadline8',
] as const;

const cacheRoot = () => join(process.env.GPUALERT_CACHE ?? join(homedir(), '.cache', 'gpualert'), 'debian');
const LIB = 'usr/lib/x86_64-linux-gnu';

function run(command: string, args: readonly string[], cwd?: string): { ok: boolean; out: string } {
  const r = spawnSync(command, args, { encoding: 'utf8', cwd, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: ['ignore', 'pipe', 'pipe'] });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** The unpacked Slurm's root (fetched once); throws one line saying what failed. */
export function slurmRoot(): string {
  const root = cacheRoot();
  const have = existsSync(root)
    ? readdirSync(root)
        .filter((d) => /^slurm-\d/.test(d))
        .sort()
    : [];
  const last = have[have.length - 1];
  if (last !== undefined) return join(root, last);
  let policy = run('apt-cache', ['policy', 'slurmctld']);
  let version = /Candidate:\s*(\S+)/.exec(policy.out)?.[1];
  if (!version || version === '(none)') {
    run('apt-get', ['update', '-qq']);
    policy = run('apt-cache', ['policy', 'slurmctld']);
    version = /Candidate:\s*(\S+)/.exec(policy.out)?.[1];
  }
  if (!version || version === '(none)') throw new Error('apt does not know the Debian package slurmctld (is this Debian or Ubuntu, with its main archive?)');
  mkdirSync(root, { recursive: true });
  const work = mkdtempSync(join(root, '.slurm-'));
  try {
    const fetched = run('apt-get', ['download', ...SLURM_PACKAGES], work);
    if (!fetched.ok) throw new Error(`apt-get download ${SLURM_PACKAGES.join(' ')} failed: ${fetched.out.trim().split('\n').pop() ?? ''}`);
    for (const deb of readdirSync(work).filter((f) => f.endsWith('.deb'))) {
      const unpacked = run('dpkg', ['-x', deb, 'root'], work);
      if (!unpacked.ok) throw new Error(`dpkg -x ${deb} failed: ${unpacked.out.trim().split('\n').pop() ?? ''}`);
    }
    const dir = join(root, `slurm-${version.replace(/[^\w.+-]/g, '_')}`);
    renameSync(join(work, 'root'), dir); // whole: a run stopped halfway leaves a dot-folder, never a half cache
    return dir;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A one-machine Slurm cluster for tests: munged on a socket of its own, slurmctld, and one slurmd
 * per fake node, all on 127.0.0.1 with ports picked free, in a temporary folder. Debian builds
 * Slurm without `--enable-multiple-slurmd`, yet each `slurmd -N NAME` serves its node on the
 * `Port=` its NodeName line gives, which is all drain and resume need. Every process is a child
 * of the test, run in the foreground, and stopped by its pid in `stop()`.
 */
export class SlurmCluster {
  private readonly children = new Map<string, ChildProcess>();

  private constructor(
    readonly dir: string,
    readonly root: string,
    readonly nodes: readonly string[],
    readonly partition: string,
    readonly morePartitions: ReadonlyMap<string, readonly string[]> = new Map(),
  ) {}

  /** The environment every Slurm command needs: the config and the unpacked libraries. */
  get env(): Record<string, string> {
    return { SLURM_CONF: join(this.dir, 'slurm.conf'), LD_LIBRARY_PATH: `${join(this.root, LIB)}:${join(this.root, LIB, 'slurm-wlm')}` };
  }

  bin(name: 'scontrol' | 'sinfo'): string {
    return join(this.root, 'usr/bin', name);
  }

  /** `more`: further partitions, each over some of the nodes (a node may be in several). */
  static async start(nodes: readonly string[], partition = 'gpu', more: ReadonlyMap<string, readonly string[]> = new Map()): Promise<SlurmCluster> {
    const root = slurmRoot();
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-slurm-'));
    chmodSync(dir, 0o755);
    const cluster = new SlurmCluster(dir, root, nodes, partition, more);
    try {
      await cluster.configure();
      cluster.startMunge();
      cluster.startController();
      for (const node of nodes)
        cluster.spawnDaemon(`slurmd-${node}`, join(root, 'usr/sbin/slurmd-wlm'), ['-D', '-N', node, '-d', join(root, 'usr/sbin/slurmstepd-wlm')]);
      await cluster.waitFor((lines) => lines.length === nodes.length && lines.every((l) => /\|idle\|/.test(l)), 'every node idle');
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  private async configure(): Promise<void> {
    const key = join(this.dir, 'munge.key');
    writeFileSync(key, randomBytes(1024), { mode: 0o600 });
    for (const sub of ['state', 'spool']) mkdirSync(join(this.dir, sub));
    const ctldPort = await freePort();
    const nodeLines: string[] = [];
    for (const node of this.nodes)
      nodeLines.push(`NodeName=${node} NodeHostname=localhost NodeAddr=127.0.0.1 Port=${await freePort()} CPUs=1 RealMemory=100 State=UNKNOWN`);
    const d = this.dir;
    const conf = [
      'ClusterName=gpualerttest',
      'SlurmctldHost=localhost(127.0.0.1)',
      `SlurmctldPort=${ctldPort}`,
      'AuthType=auth/munge',
      `AuthInfo=socket=${d}/munge.sock`,
      'CryptoType=crypto/munge',
      'SlurmUser=root',
      'SlurmdUser=root',
      `StateSaveLocation=${d}/state`,
      `SlurmdSpoolDir=${d}/spool/%n`,
      `SlurmctldPidFile=${d}/slurmctld.pid`,
      `SlurmdPidFile=${d}/slurmd-%n.pid`,
      `SlurmctldLogFile=${d}/slurmctld.log`,
      `SlurmdLogFile=${d}/slurmd-%n.log`,
      `PluginDir=${this.root}/${LIB}/slurm-wlm`,
      'ProctrackType=proctrack/linuxproc',
      'TaskPlugin=task/none',
      'SwitchType=switch/none',
      'MpiDefault=none',
      'SelectType=select/linear',
      'JobAcctGatherType=jobacct_gather/none',
      'AccountingStorageType=accounting_storage/none',
      'ReturnToService=2',
      'MessageTimeout=3',
      'SlurmctldTimeout=30',
      'SlurmdTimeout=300',
      ...nodeLines,
      `PartitionName=${this.partition} Nodes=ALL Default=YES State=UP`,
      ...[...this.morePartitions].map(([name, members]) => `PartitionName=${name} Nodes=${members.join(',')} State=UP`),
      '',
    ].join('\n');
    writeFileSync(join(d, 'slurm.conf'), conf);
  }

  private startMunge(): void {
    const d = this.dir;
    this.spawnDaemon('munged', join(this.root, 'usr/sbin/munged'), [
      '-F',
      '-f',
      `--socket=${d}/munge.sock`,
      `--key-file=${d}/munge.key`,
      `--pid-file=${d}/munged.pid`,
      `--log-file=${d}/munged.log`,
      `--seed-file=${d}/munged.seed`,
    ]);
  }

  /** slurmctld, recovering its saved state (the nodes' drains) when it ran before. */
  startController(): void {
    this.spawnDaemon('slurmctld', join(this.root, 'usr/sbin/slurmctld-wlm'), ['-D', '-i']);
  }

  /** The controller stopped: Slurm's API is down until startController. */
  async stopController(): Promise<void> {
    await this.kill('slurmctld');
  }

  private spawnDaemon(name: string, file: string, args: readonly string[]): void {
    const child = spawn(file, [...args], { env: { ...process.env, ...this.env }, stdio: 'ignore' });
    child.on('error', () => undefined); // reported by waitFor's deadline with the logs' tail
    this.children.set(name, child);
  }

  private async kill(name: string): Promise<void> {
    const child = this.children.get(name);
    this.children.delete(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  /** `sinfo` per node: `NAME|STATE|REASON`, one line each (a node in several partitions once). */
  sinfo(): string[] {
    const r = spawnSync(this.bin('sinfo'), ['--noheader', '--Node', '--format=%N|%T|%E'], { encoding: 'utf8', env: { ...process.env, ...this.env } });
    if (r.status !== 0) throw new Error(`sinfo failed: ${(r.stderr || r.stdout).trim()}`);
    const lines = r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');
    return [...new Set(lines)];
  }

  /** Whether Slurm says the node is drained or draining (`scontrol show node`, as an operator asks). */
  async nodeDrained(node: string): Promise<boolean> {
    const r = await new Promise<{ status: number | null; stdout: string }>((resolve) => {
      const child = spawn(this.bin('scontrol'), ['--oneliner', 'show', 'node', node], {
        env: { ...process.env, ...this.env },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        if (stdout.length < 65_536) stdout += chunk; // one node's line; the rest is not read
      });
      child.on('error', () => resolve({ status: null, stdout }));
      child.on('close', (status) => resolve({ status, stdout }));
    });
    const state = /(?:^| )State=(\S+)/.exec(r.stdout)?.[1] ?? '';
    return r.status === 0 && state.split('+').includes('DRAIN');
  }

  /** Waits (deadline 60 s) until sinfo's lines pass `check`. */
  async waitFor(check: (lines: string[]) => boolean, what: string, deadlineMs = 60_000): Promise<string[]> {
    const until = Date.now() + deadlineMs;
    let last: string[] = [];
    let lastError = '';
    while (Date.now() < until) {
      try {
        last = this.sinfo();
        if (check(last)) return last;
      } catch (error) {
        lastError = (error as Error).message;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`Slurm test cluster: not ${what} within ${deadlineMs} ms; sinfo: ${JSON.stringify(last)} ${lastError} (logs in ${this.dir})`);
  }

  async stop(): Promise<void> {
    const names = [...this.children.keys()].reverse();
    for (const name of names) await this.kill(name);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
