import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { cleanEnv, startCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The `rules` figure of the remediator's last line with this message. */
function rulesSaid(output: string, msg: string): number | undefined {
  const line = output
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .at(-1);
  const rules = /"rules":(\d+)/.exec(line ?? '')?.[1];
  return rules === undefined ? undefined : Number(rules);
}

describe('gpualert remediate on SIGHUP', () => {
  it('keeps its policy when the file is broken (each error at its file:line), and takes it when it is fixed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-policy-'));
    const file = join(dir, 'remediation.yaml');
    copyFileSync(new URL('../rules/remediation.yaml', import.meta.url).pathname, file);
    const good = readFileSync(file, 'utf8');
    const remediator = startCli(
      ['remediate', '--policy', file, '--scontrol', '/bin/false', '--sinfo', '/bin/false'],
      cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: `${uniqueName('reload-policy')}.`, GPUALERT_LOG_FORMAT: 'json' }),
    );
    cleanups.push(async () => {
      if (remediator.exitCode === null) {
        remediator.kill('SIGTERM');
        await once(remediator, 'exit');
      }
    });
    await waitFor(() => remediator.output().includes('"msg":"remediator_started"') || remediator.exitCode !== null, 'remediator_started', 60_000);
    expect(remediator.exitCode, remediator.output().slice(-2000)).toBeNull();
    const loaded = rulesSaid(remediator.output(), 'remediation_policy_loaded') ?? 0;
    expect(loaded).toBeGreaterThan(1);

    writeFileSync(file, good.replace('max_share: 0.1', 'max_share: lots'));
    remediator.kill('SIGHUP');
    await waitFor(() => remediator.output().includes('config_reload_failed') || remediator.exitCode !== null, 'the refused reload', 30_000);
    expect(remediator.exitCode).toBeNull();
    expect(
      remediator
        .output()
        .split('\n')
        .find((l) => l.includes('config_reload_failed')),
    ).toMatch(/remediation\.yaml:\d+/);

    // One rule left: the reload says so.
    const firstRule = good.indexOf('\n  - name:');
    const secondRule = good.indexOf('\n  - name:', firstRule + 1);
    writeFileSync(file, good.slice(0, secondRule) + '\n');
    remediator.kill('SIGHUP');
    await waitFor(() => remediator.output().includes('"msg":"config_reloaded"') || remediator.exitCode !== null, 'the reload', 30_000);
    expect(remediator.exitCode).toBeNull();
    expect(rulesSaid(remediator.output(), 'config_reloaded')).toBe(1);
  });
});
