import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../../../../bin/gpualert.mjs');

/** `gpualert …` to completion, killed after 20 s: a command that ignores its mistake would run on. */
function gpualert(args: readonly string[]) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GPUALERT_INTAKE_PORT: '0',
    GPUALERT_ENGINE_PORT: '0',
    GPUALERT_INTAKE_LISTEN: '127.0.0.1',
    GPUALERT_ENGINE_LISTEN: '127.0.0.1',
  };
  for (const key of ['GPUALERT_NOTIFIER_TOKEN', 'KAFKA_BROKERS', 'REDIS_URL']) delete env[key];
  return spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL' });
}

describe('gpualert up: --demo-recording', () => {
  it('without --demo is a usage error in one line, not a silent run without the demo', () => {
    const run = gpualert(['up', '--demo-recording', 'cooling', '--data-dir', mkdtempSync(join(tmpdir(), 'gpualert-up-usage-'))]);
    expect(run.signal).toBeNull(); // it stopped by itself
    expect(run.status).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/--demo-recording .*add --demo/);
    expect(run.stdout).not.toMatch(/gpualert_up|listening/);
  }, 30_000);
});
