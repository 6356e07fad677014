import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from './infra/run-cli.ts';

const TOKEN = 'notifier-token-SEKRET-0123456789';
const REDIS = 'redis://:REDISPASSWORD@127.0.0.1:6379';

describe('gpualert config show', () => {
  it('prints each setting a command would run on, where it came from, and secrets by their length only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-config-show-'));
    const config = join(dir, 'gpualert.yaml');
    writeFileSync(config, 'notifierPort: 9191\npartitions: 12\n');
    const env = cleanEnv({ GPUALERT_NOTIFIER_TOKEN: TOKEN, REDIS_URL: REDIS, GPUALERT_ENGINE_PORT: '9292', GPUALERT_CONFIG: config });
    const text = await runCli(['config', 'show', '--partitions', '24'], { env });
    expect([text.code, text.stderr]).toEqual([0, '']);
    const line = (key: string) =>
      text.stdout
        .split('\n')
        .find((l) => l.startsWith(`${key} `))
        ?.replace(/\s+/g, ' ');
    expect(line('notifierPort')).toBe(`notifierPort 9191 notifierPort (${config})`);
    expect(line('enginePort')).toBe('enginePort 9292 GPUALERT_ENGINE_PORT (environment)');
    expect(line('partitions')).toBe('partitions 24 --partitions (flag)');
    expect(line('intakePort')).toBe('intakePort 9468 default (set with --intake-port, GPUALERT_INTAKE_PORT)');
    expect(line('notifierToken')).toBe(`notifierToken (set, ${TOKEN.length} characters) GPUALERT_NOTIFIER_TOKEN (environment)`);
    expect(line('redisUrl')).toBe(`redisUrl (set, ${REDIS.length} characters) REDIS_URL (environment)`);
    const json = await runCli(['config', 'show', '--command', 'notifier', '--format', 'json'], { env });
    expect(json.code).toBe(0);
    const settings = (JSON.parse(json.stdout) as { settings: { setting: string; value: string | null; source: string }[] }).settings;
    expect(settings.find((s) => s.setting === 'port')).toMatchObject({ value: '9095', source: 'default' }); // `notifierPort` is up's name; the notifier's own is `port`
    expect(settings.find((s) => s.setting === 'token')).toMatchObject({ value: `(set, ${TOKEN.length} characters)`, source: 'environment' });
    for (const out of [text.stdout, json.stdout]) {
      expect(out).not.toContain('SEKRET');
      expect(out).not.toContain('REDISPASSWORD');
    }
  });

  it('fails as the command itself would on a bad value, in one line, and names the commands it knows', async () => {
    const bad = await runCli(['config', 'show', '--command', 'engine'], { env: cleanEnv({ GPUALERT_FORGET_AFTER: 'soon' }) });
    expect([bad.code, bad.stderr.trim()]).toEqual([
      2,
      'error[GA-CONFIG-INVALID]: invalid config: GPUALERT_FORGET_AFTER (environment): expects a duration like 7d, 36h or 2w (got "soon")',
    ]);
    const unknown = await runCli(['config', 'show', '--command', 'nope'], { env: cleanEnv() });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error\[GA-CLI-USAGE\]: gpualert config show: --command must be one of up, agent, engine, notifier, intake, /);
  });
});
