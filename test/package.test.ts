import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { cleanEnv } from './infra/run-cli.ts';
import { offlineLock } from '../tools/npm-offline-lock.ts';
import { packCheckout } from '../tools/npm-pack.ts';
import { FakeNvidiaSmi } from './infra/fake-nvidia-smi.ts';
import { waitFor } from './infra/wait-for.ts';

const ROOT = resolve(import.meta.dirname, '..');
const fixture = (name: string) => join(ROOT, 'test/fixtures/kernel', name);
let bin = '';
let installed = '';
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  private?: boolean;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  publishConfig?: Record<string, unknown>;
  repository?: { url?: string };
};

/** npm pointed at a port nothing answers on: a step that would reach a registry fails instead. */
const DEAD_REGISTRY = 'http://127.0.0.1:9/';
const NO_REGISTRY = ['--registry', DEAD_REGISTRY, '--offline', '--no-audit', '--no-fund'];
const npm = (args: readonly string[], cwd: string) =>
  execFileSync('npm', [...args, ...NO_REGISTRY], { cwd, encoding: 'utf8', env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
let folder = '';
let tarball = '';

/**
 * The package as `npm pack` makes it (its prepack builds dist/), installed into an empty folder
 * offline: the tarball itself, its dependencies from npm's local cache at the versions this
 * checkout locked (tools/npm-offline-lock.ts), no registry reached.
 */
beforeAll(() => {
  const packs = mkdtempSync(join(tmpdir(), 'gpualert-pack-'));
  tarball = packCheckout(packs);
  folder = mkdtempSync(join(tmpdir(), 'gpualert-installed-'));
  const { packageJson, lock } = offlineLock({
    repositoryLock: join(ROOT, 'package-lock.json'),
    packageName: manifest.name,
    version: manifest.version,
    tarball,
    dependencies: manifest.dependencies,
    bin: manifest.bin,
    consumer: 'someone-else',
    registry: DEAD_REGISTRY,
  });
  writeFileSync(join(folder, 'package.json'), packageJson);
  writeFileSync(join(folder, 'package-lock.json'), lock);
  npm(['ci', '--silent'], folder);
  installed = join(folder, 'node_modules/gpualert');
  bin = join(folder, 'node_modules/.bin/gpualert');
}, 180_000);

const run = (args: readonly string[]) => execFileSync(bin, args, { env: cleanEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * The npm packages the installed gpualert loads until it prints `ready`: a loader hook names each
 * package an ES module imports, and at exit the process names each package in CommonJS's module
 * cache (what a CommonJS package requires); the process is stopped with SIGTERM.
 */
async function packagesLoaded(args: readonly string[], ready: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const hooks = join(folder, 'name-packages.mjs');
  writeFileSync(
    hooks,
    `export async function resolve(specifier, context, next) {
      if (/^[a-z@]/.test(specifier) && !/^(node|file|data):/.test(specifier)) process.stderr.write('loads-package ' + specifier + '\\n');
      return next(specifier, context);
    }`,
  );
  writeFileSync(
    join(folder, 'register.mjs'),
    `import { createRequire, register } from 'node:module';
    register(${JSON.stringify(`file://${hooks}`)});
    const required = createRequire(import.meta.url).cache;
    process.on('exit', () => {
      for (const file of Object.keys(required)) {
        const name = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file)?.[1];
        if (name) process.stderr.write('loads-package ' + name + '\\n');
      }
    });`,
  );
  const child = spawn(process.execPath, ['--import', join(folder, 'register.mjs'), join(installed, 'bin/gpualert.mjs'), ...args], {
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  try {
    await waitFor(() => stdout.includes(ready) || stderr.includes(ready), `gpualert ${args[0]}`, 30_000);
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  return [...new Set([...stderr.matchAll(/^loads-package (\S+)$/gm)].map((m) => m[1]!))];
}

describe('the packed package, installed where there is no checkout', () => {
  it('holds the bundle, the rules and the demo, and neither sources nor tsx', () => {
    expect(existsSync(join(installed, 'dist/gpualert.mjs'))).toBe(true);
    expect(existsSync(join(installed, 'rules/xid-catalog.yaml'))).toBe(true);
    expect(existsSync(join(installed, 'packages'))).toBe(false);
    expect(existsSync(join(installed, '..', 'tsx'))).toBe(false);
    expect(existsSync(join(installed, '..', 'typescript'))).toBe(false);
  });

  it('is publishable: not private, public with provenance, no made-up repository, and `npm publish --dry-run` takes the tarball', () => {
    expect(manifest.private).toBeUndefined();
    expect(manifest.publishConfig).toEqual({ access: 'public', provenance: true });
    // gpualert has no public repository yet: none is named (an address that is not the project's
    // would mislead, and the registry refuses provenance whose repository does not match it). The
    // first publish adds the real one, the repository its workflow runs in, and changes this line.
    expect(manifest.repository).toBeUndefined();
    const out = npm(['publish', '--dry-run', '--json', tarball], folder);
    // npm 10 prints the package's summary; npm 11 keys it by the package's name.
    const summary = JSON.parse(out.slice(out.indexOf('{'))) as Record<string, unknown>;
    expect(summary.gpualert ?? summary).toMatchObject({ name: 'gpualert', version: manifest.version });
  });

  it('`npx gpualert` from the installed tarball prints its version and parses a kernel log', () => {
    const npx = (args: readonly string[]) =>
      execFileSync('npx', ['--offline', '--registry', DEAD_REGISTRY, 'gpualert', ...args], {
        cwd: folder,
        env: cleanEnv(),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    expect(npx(['--version']).trim()).toBe(manifest.version);
    const events = npx(['parse', 'kernel', fixture('dmesg-gpu-fallen-off-bus.log'), '--host', 'n1'])
      .trim()
      .split('\n');
    expect(events.length).toBeGreaterThan(0);
    expect(events.map((l) => (JSON.parse(l) as { data: { xid?: number } }).data.xid)).toContain(79);
  });

  it('parses a kernel log and replays the bundled recording', () => {
    const events = run(['parse', 'kernel', fixture('dmesg-gpu-fallen-off-bus.log'), '--host', 'n1'])
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { data: { xid?: number } });
    expect(events.some((e) => e.data.xid === 79)).toBe(true);
    const alerts = run(['replay', join(installed, 'demo/incident.jsonl')])
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { data: { category: string } });
    expect(alerts.map((a) => a.data.category)).toContain('fallen_off_bus');
  });

  it("runs a host's agent without loading what only the services use (Redis's client unless REDIS_URL is set, nodemailer), as the agent's memory asks (issue 34)", async () => {
    const kernelLog = join(folder, 'kern.log');
    writeFileSync(kernelLog, '');
    const smi = new FakeNvidiaSmi();
    const agent = [
      'agent',
      '--host',
      'h1',
      '--nvidia-smi',
      smi.path,
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
    ];
    const loaded = await packagesLoaded(agent, 'agent_started');
    // Both ways of loading are seen: kafkajs imported, sonic-boom required by pino.
    expect(loaded).toEqual(expect.arrayContaining(['kafkajs', 'prom-client', 'sonic-boom']));
    expect(loaded.filter((name) => name === 'ioredis' || name === 'nodemailer')).toEqual([]);
    // Where REDIS_URL is set (the shipped units and DaemonSet: the kernel collector keeps its place there), Redis's client loads.
    expect(await packagesLoaded(agent, 'agent_started', { REDIS_URL: inject('redisUrl') })).toContain('ioredis');
  });

  it("runs `up` with routes that send no email without loading nodemailer, nor Kafka's and Redis's clients on its in-process bus and store", async () => {
    const loaded = await packagesLoaded(['up', '--demo', '--speed', '600', '--data-dir', mkdtempSync(join(tmpdir(), 'gpualert-pk-up-'))], '[fallen_off_bus]', {
      GPUALERT_INTAKE_PORT: '0',
      GPUALERT_INTAKE_LISTEN: '127.0.0.1',
    });
    // The hook sees what `up` loads: the routes' YAML, the metrics.
    expect(loaded).toEqual(expect.arrayContaining(['yaml', 'prom-client', 'sonic-boom']));
    expect(loaded.filter((name) => name === 'kafkajs' || name === 'ioredis' || name === 'nodemailer')).toEqual([]);
  });

  it('runs `up --demo` and stops on Ctrl-C', async () => {
    const up = spawn(bin, ['up', '--demo', '--speed', '600', '--data-dir', mkdtempSync(join(tmpdir(), 'gpualert-pk-up-'))], {
      env: cleanEnv({ GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    up.stdout.on('data', (c: Buffer) => (output += c.toString()));
    up.stderr.on('data', (c: Buffer) => (output += c.toString()));
    await waitFor(() => output.includes('[fallen_off_bus]'), 'the lost GPU', 30_000);
    up.kill('SIGINT');
    expect((await once(up, 'exit'))[0]).toBe(0);
  });
});
