import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ipmitoolOutputKind, ipmitoolSource, parseSdr, parseSel } from '@gpualert/collectors';
import { BmcEventData, HostSampleData, parseEnvelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { runCli } from './infra/run-cli.ts';

/** Real `ipmitool` outputs from public sources (test/fixtures/bmc/ipmitool/README.md). */
const DIR = new URL('./fixtures/bmc/ipmitool/', import.meta.url).pathname;
const read = (name: string) => readFileSync(join(DIR, name), 'utf8');
/** The fixture's rows as [name, status, entity, reading], to state expectations from the file itself. */
const rows = (name: string) =>
  read(name)
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('|').map((c) => c.trim()));

describe('ipmitool sdr elist', () => {
  it('Dell R740: six fans in RPM, inlet and exhaust, both PSUs present, both groups fully redundant', () => {
    const { sample, problems } = parseSdr(read('sdr-elist-dell-r740.txt'));
    expect(problems).toEqual([]);
    expect(HostSampleData.safeParse(sample).success).toBe(true);
    const fanRows = rows('sdr-elist-dell-r740.txt').filter((r) => / RPM$/.test(r[4]!));
    expect(fanRows).toHaveLength(6);
    expect(sample.fans).toEqual(fanRows.map((r) => ({ name: r[0], rpm: Number.parseInt(r[4]!, 10), health: 'ok' })));
    expect(sample.temperatures).toContainEqual({ name: 'Inlet Temp', celsius: 23, location: 'inlet', health: 'ok' });
    expect(sample.temperatures).toContainEqual({ name: 'Exhaust Temp', celsius: 31, location: 'exhaust', health: 'ok' });
    // The two "Temp" rows sit on entity 3.x, the processors.
    expect(sample.temperatures?.filter((t) => t.location === 'cpu').map((t) => t.celsius)).toEqual([34, 45]);
    // GPU1..8 Temp are "ns | Disabled": not read, not reported as 0.
    expect(sample.temperatures?.some((t) => t.name.startsWith('GPU'))).toBe(false);
    expect(sample.psus).toEqual([
      { name: 'PSU 10.1', health: 'ok', watts: null, state: 'enabled' },
      { name: 'PSU 10.2', health: 'ok', watts: null, state: 'enabled' },
    ]);
    expect(sample.psu_redundancy).toEqual([{ name: 'PS Redundancy', state: 'full', health: 'ok' }]);
    expect(sample.fan_redundancy).toEqual([{ name: 'Fan Redundancy', state: 'full', health: 'ok' }]);
  });

  it('HP DL360 G7 with a failed PSU: PSU 1 critical at 0 W, redundancy lost, fans in percent', () => {
    const { sample, problems } = parseSdr(read('sdr-elist-hp-dl360-psu-failed.txt'));
    expect(problems).toEqual([]);
    expect(sample.psus).toEqual([
      { name: 'Power Supply 1', health: 'critical', watts: 0, state: 'enabled' },
      { name: 'Power Supply 2', health: 'ok', watts: 95, state: 'enabled' },
    ]);
    expect(sample.psu_redundancy).toEqual([{ name: 'Power Supplies', state: 'lost', health: 'warning' }]);
    expect(sample.fan_redundancy).toEqual([{ name: 'Fans', state: 'full', health: 'ok' }]);
    expect(sample.fans).toHaveLength(4);
    expect(sample.fans?.[0]).toEqual({ name: 'Fan Block 1', rpm: null, percent: 21.56, health: 'ok' });
    // Entity 64 is an air inlet, 65 a processor (IPMI's entity table).
    expect(sample.temperatures?.find((t) => t.name === 'Temp 1')).toMatchObject({ location: 'inlet', celsius: 20 });
    expect(sample.temperatures?.find((t) => t.name === 'Temp 2')).toMatchObject({ location: 'cpu', celsius: 40 });
    expect(sample.temperatures?.some((t) => t.name === 'Temp 4')).toBe(false);
  });

  it('one line that is not a sensor row costs that line, named by its number', () => {
    const text = `${read('sdr-elist-hp-dl360-psu-failed.txt').trimEnd()}\nthis is not ipmitool output\n`;
    const { sample, problems } = parseSdr(text);
    expect(problems).toEqual([expect.objectContaining({ line: 44, text: 'this is not ipmitool output' })]);
    expect(sample.psus).toHaveLength(2);
  });
});

describe('ipmitool sel elist', () => {
  it('every record of the sample becomes an entry; redundancy lost and AC lost are errors, deasserted ones info', () => {
    const text = read('sel-elist-actsys-sample.txt');
    const { entries, problems } = parseSel(text);
    expect(problems).toEqual([]);
    expect(entries).toHaveLength(text.trim().split('\n').length);
    for (const e of entries) expect(BmcEventData.safeParse(e).success).toBe(true);
    expect(entries.find((e) => e.entry_id === '4')).toMatchObject({
      created: '2014-06-03T17:38:06.000Z',
      severity: 'error',
      sensor: 'Fan #0x0c',
      message: 'Redundancy Lost',
      asserted: true,
    });
    expect(entries.find((e) => e.entry_id === '6')).toMatchObject({ severity: 'info', message: 'Redundancy Lost (deasserted)', asserted: false });
    expect(entries.find((e) => e.entry_id === '29')).toMatchObject({ severity: 'error', sensor: 'Power Supply PS1 Status', message: 'Power Supply AC lost' });
    expect(entries.find((e) => e.entry_id === 'b')).toMatchObject({ severity: 'warning', message: 'Lower Non-critical going low' });
    expect(entries.find((e) => e.entry_id === 'c')).toMatchObject({ severity: 'error', message: 'Lower Critical going low' });
  });

  it('tells SEL output from SDR output', () => {
    expect(ipmitoolOutputKind(read('sel-elist-actsys-sample.txt'))).toBe('sel');
    expect(ipmitoolOutputKind(read('sdr-elist-dell-r740.txt'))).toBe('sdr');
    expect(ipmitoolOutputKind('hello\nworld\n')).toBeUndefined();
  });
});

describe('collect bmc --ipmitool', () => {
  it('runs the configured ipmitool with its arguments, sdr then sel, and reads both', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-ipmitool-'));
    const fake = join(dir, 'ipmitool');
    // Answers only to the exact arguments expected, as a stand-in for a BMC behind lanplus.
    writeFileSync(
      fake,
      [
        '#!/bin/sh',
        `[ "$1 $2 $3 $4" = "-I lanplus -H bmc-7" ] || { echo "unexpected args: $*" >&2; exit 2; }`,
        `case "$5 $6" in "sdr elist") cat '${join(DIR, 'sdr-elist-hp-dl360-psu-failed.txt')}';; "sel elist") cat '${join(DIR, 'sel-elist-actsys-sample.txt')}';; *) exit 3;; esac`,
      ].join('\n'),
    );
    chmodSync(fake, 0o755);
    const source = ipmitoolSource({ binary: fake, args: ['-I', 'lanplus', '-H', 'bmc-7'], timeoutMs: 5_000, maxOutputBytes: 1 << 20 });
    const reading = await source.poll();
    expect(reading.sample.psus?.[0]).toMatchObject({ name: 'Power Supply 1', health: 'critical' });
    expect(reading.entries).toHaveLength(41);

    const wrong = ipmitoolSource({ binary: fake, args: ['-I', 'open'], timeoutMs: 5_000, maxOutputBytes: 1 << 20 });
    await expect(wrong.poll()).rejects.toMatchObject({ kind: 'command_failed', message: expect.stringContaining('exit 2: unexpected args') });
    const small = ipmitoolSource({ binary: fake, args: ['-I', 'lanplus', '-H', 'bmc-7'], timeoutMs: 5_000, maxOutputBytes: 100 });
    await expect(small.poll()).rejects.toMatchObject({ kind: 'unparseable' });
  });
});

describe('gpualert parse bmc', () => {
  it('an sdr file gives one host.sample, a sel file one bmc.event per record, for the host', async () => {
    const sdr = await runCli(['parse', 'bmc', join(DIR, 'sdr-elist-dell-r740.txt'), '--host', 'gpu-node-07']);
    expect(sdr.code).toBe(0);
    const [sample] = sdr.stdout
      .trim()
      .split('\n')
      .map((l) => parseEnvelope(l));
    expect(sample).toMatchObject({ ok: true, value: { type: 'host.sample', host: 'gpu-node-07', data: { origin: 'ipmitool' } } });

    const sel = await runCli(['parse', 'bmc', join(DIR, 'sel-elist-actsys-sample.txt'), '--host', 'gpu-node-07']);
    const events = sel.stdout
      .trim()
      .split('\n')
      .map((l) => parseEnvelope(l));
    expect(events).toHaveLength(41);
    expect(events.every((e) => e.ok && e.value.type === 'bmc.event')).toBe(true);

    const bad = await runCli(['parse', 'bmc', '-'], { input: 'not ipmitool\n' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('none of');
  });
});

describe('gpualert collect bmc: its settings', () => {
  it('wants one source, refuses a password on the command line, and reads credentials from a file without echoing them', async () => {
    const none = await runCli(['collect', 'bmc']);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('give one of --redfish URL, --targets FILE or --ipmitool');
    const withP = await runCli(['collect', 'bmc', '--ipmitool', '--ipmitool-args', '-I lanplus -H bmc -U admin -P hunter2']);
    expect(withP.code).not.toBe(0);
    expect(withP.stderr).toContain('-P puts the password where `ps` shows it');
    const inUrl = await runCli(['collect', 'bmc', '--redfish', 'https://admin:hunter2@bmc.example', '--auth', 'none']);
    expect(inUrl.stderr).toContain('credentials in the BMC URL are refused');
    expect(inUrl.stderr).not.toContain('hunter2');

    const { bmcCredentials } = await import('../packages/cli/src/commands/collect-bmc.ts');
    const { loadSettings } = await import('../packages/cli/src/settings/command-settings.ts');
    const { BMC_SETTINGS } = await import('../packages/cli/src/settings/collector-settings.ts');
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-bmc-cred-'));
    writeFileSync(join(dir, 'lines'), 'username=root\npassword = s3cret=with=equals\n');
    writeFileSync(join(dir, 'json'), JSON.stringify({ username: 'admin', password: 'p' }));
    writeFileSync(join(dir, 'nopass'), 'username=root\n');
    expect(bmcCredentials({ credentialsFile: join(dir, 'lines') })).toEqual({ username: 'root', password: 's3cret=with=equals' });
    expect(bmcCredentials({ credentialsFile: join(dir, 'json') })).toEqual({ username: 'admin', password: 'p' });
    expect(() => bmcCredentials({ credentialsFile: join(dir, 'nopass') })).toThrow(/no password/);
    expect(bmcCredentials(loadSettings(BMC_SETTINGS, {}, { GPUALERT_BMC_USERNAME: 'u', GPUALERT_BMC_PASSWORD: 'v' }))).toEqual({
      username: 'u',
      password: 'v',
    });
    expect(bmcCredentials(loadSettings(BMC_SETTINGS, {}, {}))).toBeUndefined();
    expect(bmcCredentials(loadSettings(BMC_SETTINGS, {}, { GPUALERT_BMC_CREDENTIALS_FILE: join(dir, 'json') }))).toEqual({ username: 'admin', password: 'p' });
  });
});
