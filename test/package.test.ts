import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv } from './infra/run-cli.ts';
import { waitFor } from './infra/wait-for.ts';

const ROOT = resolve(import.meta.dirname, '..');
const fixture = (name: string) => join(ROOT, 'test/fixtures/kernel', name);
let bin = '';
let installed = '';

/** The package as `npm pack` makes it (its prepack builds dist/), installed into an empty folder. */
beforeAll(() => {
  const packs = mkdtempSync(join(tmpdir(), 'gpualert-pack-'));
  execFileSync('npm', ['pack', '--silent', '--pack-destination', packs], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  const tarball = join(
    packs,
    readdirSync(packs).find((f) => f.endsWith('.tgz'))!,
  );
  const folder = mkdtempSync(join(tmpdir(), 'gpualert-installed-'));
  writeFileSync(join(folder, 'package.json'), '{"name":"someone-else","private":true}\n');
  execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--silent', tarball], { cwd: folder, stdio: ['ignore', 'ignore', 'pipe'] });
  installed = join(folder, 'node_modules/gpualert');
  bin = join(folder, 'node_modules/.bin/gpualert');
}, 180_000);

const run = (args: readonly string[]) => execFileSync(bin, args, { env: cleanEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

describe('the packed package, installed where there is no checkout', () => {
  it('holds the bundle, the rules and the demo, and neither sources nor tsx', () => {
    expect(existsSync(join(installed, 'dist/gpualert.mjs'))).toBe(true);
    expect(existsSync(join(installed, 'rules/xid-catalog.yaml'))).toBe(true);
    expect(existsSync(join(installed, 'packages'))).toBe(false);
    expect(existsSync(join(installed, '..', 'tsx'))).toBe(false);
    expect(existsSync(join(installed, '..', 'typescript'))).toBe(false);
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
