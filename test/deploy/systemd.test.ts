import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const UNITS_DIR = join(import.meta.dirname, '..', '..', 'deploy/systemd');
const UNITS = readdirSync(UNITS_DIR).filter((f) => f.endsWith('.service')).sort();
/** Where `npm install --global` puts the packed bin, the path every ExecStart names. */
const BIN = '/usr/local/bin/gpualert';

function settings(unit: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of readFileSync(join(UNITS_DIR, unit), 'utf8').split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match) out.set(match[1]!, [...(out.get(match[1]!) ?? []), match[2]!]);
  }
  return out;
}

// systemd-analyze comes with Debian's `systemd` package; without it this fails, naming it.
const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });

describe('deploy/systemd', () => {
  // A root with the system's own units and a stand-in for the installed bin, so `verify` checks
  // these units exactly as on a host where the package is installed.
  const root = mkdtempSync(join(tmpdir(), 'gpualert-systemd-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('has units for the agent, engine, notifier and intake', () => {
    expect(UNITS).toEqual(['gpualert-agent.service', 'gpualert-engine.service', 'gpualert-intake.service', 'gpualert-notifier.service']);
  });

  it('every unit passes systemd-analyze verify with nothing to say', () => {
    expect(analyze.error, 'systemd-analyze is missing: apt-get install systemd').toBeUndefined();
    mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
    mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
    cpSync('/usr/lib/systemd/system', join(root, 'usr/lib/systemd/system'), { recursive: true });
    writeFileSync(join(root, BIN), '#!/bin/sh\n');
    chmodSync(join(root, BIN), 0o755);
    // A stand-in for kill, which the notifier's ExecReload sends SIGHUP with.
    mkdirSync(join(root, 'bin'), { recursive: true });
    writeFileSync(join(root, 'bin/kill'), '#!/bin/sh\n');
    chmodSync(join(root, 'bin/kill'), 0o755);
    for (const unit of UNITS) cpSync(join(UNITS_DIR, unit), join(root, 'etc/systemd/system', unit));
    const run = spawnSync('systemd-analyze', ['verify', '--man=no', `--root=${root}`, ...UNITS.map((u) => join(root, 'etc/systemd/system', u))], { encoding: 'utf8' });
    // verify exits 0 on an unknown key and only warns, so any output at all fails the test.
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('verify does catch a misspelt hardening key', () => {
    const bad = join(root, 'etc/systemd/system/gpualert-typo.service');
    writeFileSync(bad, readFileSync(join(UNITS_DIR, 'gpualert-engine.service'), 'utf8').replace('ProtectSystem=strict', 'ProtectSystm=strict'));
    const run = spawnSync('systemd-analyze', ['verify', '--man=no', `--root=${root}`, bad], { encoding: 'utf8' });
    expect(run.stderr).toContain("Unknown key 'ProtectSystm'");
  });

  it.each(UNITS)('%s is hardened, with a user of its own and secrets from /etc/gpualert', (unit) => {
    const s = settings(unit);
    for (const [key, value] of [['ProtectSystem', 'strict'], ['ProtectHome', 'yes'], ['NoNewPrivileges', 'yes'], ['PrivateTmp', 'yes'], ['DynamicUser', 'yes'], ['Restart', 'on-failure']]) {
      expect(s.get(key!), `${unit} ${key}`).toEqual([value]);
    }
    expect(s.get('EnvironmentFile')).toContain(unit === 'gpualert-agent.service' ? '-/etc/gpualert/%N.env' : '/etc/gpualert/%N.env');
    expect(s.get('ExecStart')?.[0]?.startsWith(`${BIN} ${unit.slice('gpualert-'.length, -'.service'.length)}`)).toBe(true);
    expect(s.has('MemoryDenyWriteExecute'), 'V8 needs writable-executable memory').toBe(false);
  });

  it('only the agent may hold a capability, and only CAP_SYSLOG (for /dev/kmsg)', () => {
    for (const unit of UNITS) {
      const s = settings(unit);
      const expected = unit === 'gpualert-agent.service' ? ['CAP_SYSLOG'] : [''];
      expect(s.get('CapabilityBoundingSet'), unit).toEqual(expected);
      expect(s.get('AmbientCapabilities'), unit).toEqual(expected);
      // ProtectKernelLogs would hide /dev/kmsg from the agent; every other unit sets it.
      expect(s.get('ProtectKernelLogs'), unit).toEqual(unit === 'gpualert-agent.service' ? undefined : ['yes']);
    }
  });
});
