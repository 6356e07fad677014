import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALL_SETTINGS } from './all-settings.ts';
import { loadSettings, resolveSettings } from './command-settings.ts';
import { ENGINE_SETTINGS } from './engine-settings.ts';
import { INTAKE_SETTINGS } from './intake-settings.ts';
import { NOTIFIER_SETTINGS } from './notifier-settings.ts';
import { UP_SETTINGS } from './up-settings.ts';

const ROOT = join(import.meta.dirname, '../../../..');
const DAY = 86_400_000;

function file(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gpualert-settings-')), name);
  writeFileSync(path, text);
  return path;
}

function productionFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : productionFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('settings: one way in', () => {
  it('every GPUALERT_ variable the code names is a setting some command loads (none read on the side)', () => {
    const declared = new Set([...ALL_SETTINGS.values()].flatMap((s) => Object.values<{ env?: string }>(s.sources).map((source) => source.env)));
    // Named in the code but not settings: the config file's own path, the intake's secrets file (read as a file over the config file), the test run's clock.
    const notSettings = new Set(['GPUALERT_CONFIG', 'GPUALERT_INTAKE_SECRETS_FILE', 'GPUALERT_CLOCK_OFFSET_MS']);
    const named = new Map<string, string>();
    for (const base of ['packages', 'services']) {
      for (const path of productionFiles(join(ROOT, base))) {
        for (const match of readFileSync(path, 'utf8').matchAll(/\bGPUALERT_[A-Z0-9_]*[A-Z0-9]\b/g)) named.set(match[0], relative(ROOT, path));
      }
    }
    expect(named.size).toBeGreaterThan(20);
    const undeclared = [...named].filter(([name]) => !declared.has(name) && !notSettings.has(name)).map(([name, where]) => `${name} (${where})`);
    expect(undeclared).toEqual([]);
    // …and nothing reads process.env but the loader and the places that hand it on whole.
    const readers = ['packages', 'services']
      .flatMap((base) => productionFiles(join(ROOT, base)))
      .filter((path) => /process\.env\b/.test(readFileSync(path, 'utf8')))
      .map((path) => relative(ROOT, path))
      .sort();
    expect(readers).toEqual([
      'packages/cli/src/commands/job.ts', // hands process.env to the loader (tests give their own)
      'packages/cli/src/commands/notifier.ts', // the routes file's `env:NAME` secrets, resolved by the channels
      'packages/cli/src/commands/up.ts', // the same
      'packages/cli/src/settings/command-settings.ts', // the loader
      'packages/runtime/src/data-dir.ts', // XDG_DATA_HOME, the desktop's convention, when no dataDir is set
    ]);
  });

  it("reads flags over the environment over the config file over defaults, under each service's name in `up`", () => {
    const config = file('gpualert.yaml', 'notifierPort: 9100\nenginePort: 9101\nintakePort: 9102\npartitions: 3\n');
    const settings = loadSettings(UP_SETTINGS, { config, intakePort: '9200' }, { GPUALERT_ENGINE_PORT: '9300' });
    expect([settings.notifierPort, settings.enginePort, settings.intakePort, settings.partitions]).toEqual([9100, 9300, 9200, 3]);
    expect(Object.isFrozen(settings)).toBe(true);
    const { effective } = resolveSettings(UP_SETTINGS, { config, intakePort: '9200' }, { GPUALERT_ENGINE_PORT: '9300' });
    const where = new Map(effective.map((s) => [s.key, [s.origin, s.where]]));
    expect(where.get('notifierPort')).toEqual(['file', `notifierPort (${config})`]);
    expect(where.get('enginePort')).toEqual(['environment', 'GPUALERT_ENGINE_PORT (environment)']);
    expect(where.get('intakePort')).toEqual(['flag', '--intake-port (flag)']);
    expect(where.get('keyPrefix')).toEqual(['default', undefined]);
  });

  it('takes a secret from the environment or a file, never from a flag', () => {
    const token = 'notifier-token-0123456789';
    expect(loadSettings(UP_SETTINGS, { notifierToken: token }, {}).notifierToken).toBeUndefined();
    expect(loadSettings(UP_SETTINGS, {}, { GPUALERT_NOTIFIER_TOKEN: token }).notifierToken).toBe(token);
    // The intake's secrets file is read over the config file, in `intake` and in `up` alike.
    const secrets = file('intake-secrets.yaml', 'token: intake-token-from-file-0123\n');
    expect(loadSettings(INTAKE_SETTINGS, { secretsFile: secrets }, {}).token).toBe('intake-token-from-file-0123');
    expect(loadSettings(UP_SETTINGS, {}, { GPUALERT_INTAKE_SECRETS_FILE: secrets }).intakeToken).toBe('intake-token-from-file-0123');
    const shown = resolveSettings(UP_SETTINGS, {}, { GPUALERT_NOTIFIER_TOKEN: token }).effective.find((s) => s.key === 'notifierToken');
    expect(shown?.shown).toBe(`(set, ${token.length} characters)`);
  });

  it('GPUALERT_FORGET_AFTER: 7 days unless set; a value that does not read stops the engine with one line', () => {
    expect(loadSettings(ENGINE_SETTINGS, {}, {}).forgetAfter).toBeUndefined(); // the engine's own default, 7 days
    expect(loadSettings(ENGINE_SETTINGS, {}, { GPUALERT_FORGET_AFTER: '36h' }).forgetAfter).toBe(36 * 3_600_000);
    expect(loadSettings(ENGINE_SETTINGS, {}, { GPUALERT_FORGET_AFTER: '2w' }).forgetAfter).toBe(14 * DAY);
    expect(() => loadSettings(ENGINE_SETTINGS, {}, { GPUALERT_FORGET_AFTER: 'soon' })).toThrow(
      'invalid config: GPUALERT_FORGET_AFTER (environment): expects a duration like 7d, 36h or 2w (got "soon")',
    );
    expect(() => loadSettings(ENGINE_SETTINGS, {}, { GPUALERT_FORGET_AFTER: '2h' })).toThrow('between 1d and 366d');
    expect(() => loadSettings(UP_SETTINGS, {}, { GPUALERT_FORGET_AFTER: '2h' })).toThrow(
      /^invalid config: GPUALERT_FORGET_AFTER \(environment\): must be between 1d and 366d/,
    );
  });

  it('refuses what a command could never run on, naming the setting and where it came from', () => {
    expect(() => loadSettings(ENGINE_SETTINGS, { metricsPort: '0x50' }, {})).toThrow(
      'invalid config: --metrics-port (flag): expected a port 0-65535 (got "0x50")',
    );
    expect(() => loadSettings(ENGINE_SETTINGS, { clock: 'sundial' }, {})).toThrow(/^invalid config: --clock \(flag\): /);
    expect(() => loadSettings(UP_SETTINGS, {}, { GPUALERT_NOTIFIER_LISTEN: '0.0.0.0:9095 ' })).toThrow(
      /^invalid config: GPUALERT_NOTIFIER_LISTEN \(environment\): expected an address to listen on/,
    );
    expect(() => loadSettings(UP_SETTINGS, {}, { GPUALERT_NOTIFIER_TOKEN: ' padded-token-0123456789' })).toThrow(
      /GPUALERT_NOTIFIER_TOKEN \(environment\): must not start or end with white space.*not shown\)$/,
    );
    // The engines the console asks: http(s) URLs of their ports, a list; one that is not is named.
    expect(loadSettings(NOTIFIER_SETTINGS, {}, { GPUALERT_NOTIFIER_ENGINES: 'http://engine-0:9470, http://engine-1:9470' }).engines).toEqual([
      'http://engine-0:9470',
      'http://engine-1:9470',
    ]);
    // dns+: every address of the name (a headless Service's pods)
    expect(loadSettings(NOTIFIER_SETTINGS, {}, { GPUALERT_NOTIFIER_ENGINES: 'dns+http://gpualert-engine:9470' }).engines).toEqual([
      'dns+http://gpualert-engine:9470',
    ]);
    expect(() => loadSettings(NOTIFIER_SETTINGS, {}, { GPUALERT_NOTIFIER_ENGINES: 'http://ops:secret@engine-0:9470' })).toThrow(
      /got "http:\/\/\[redacted\]@engine-0:9470"/,
    );
    for (const bad of ['engine-0:9470', 'ftp://engine-0:9470', 'http://ops:secret@engine-0:9470', 'dns+ftp://engine:9470', 'dns+engine:9470'])
      expect(() => loadSettings(NOTIFIER_SETTINGS, {}, { GPUALERT_NOTIFIER_ENGINES: bad })).toThrow(
        /^invalid config: GPUALERT_NOTIFIER_ENGINES \(environment\): expected http\(s\) URLs of the engines' port/,
      );
  });
});
