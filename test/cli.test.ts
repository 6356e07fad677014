import { once } from 'node:events';
import { describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli, startCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

describe('gpualert command line', () => {
  it('lists every subcommand of the design in --help', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['up', 'collect', 'intake', 'engine', 'notifier', 'parse', 'replay', 'rules', 'timeline', 'silence']) {
      expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
  });

  it('says plainly when a command is not built yet, and exits non-zero', async () => {
    const result = await runCli(['engine']);
    expect(result.code).toBe(3);
    expect(result.stderr.trim()).toBe('gpualert engine: not built yet');
  });

  it('answers bad arguments and bad config with one line and exit 2', async () => {
    const unknown = await runCli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'frobnicate'/);
    const badConfig = await runCli(['up'], { env: cleanEnv({ KAFKA_BROKERS: 'no-port-here' }) });
    expect(badConfig.code).toBe(2);
    expect(badConfig.stderr.trim().split('\n')).toHaveLength(1);
    expect(badConfig.stderr).toMatch(/^gpualert: invalid config: KAFKA_BROKERS \(environment\): expected host:port/);
  });

  it('`up` runs embedded with no Kafka or Redis and stops cleanly on Ctrl-C', async () => {
    const up = startCli(['up']);
    await waitFor(() => up.output().includes('"msg":"gpualert_up"'), 'gpualert_up', 20_000);
    expect(up.output()).toMatch(/"mode":"embedded","bus":"memory","store":"memory"/);
    up.kill('SIGINT');
    const [code] = await once(up, 'exit');
    expect(code).toBe(0);
    expect(up.output()).toContain('"msg":"gpualert_stopped"');
  });

  it('`up` switches to Kafka and Redis when they are configured', async () => {
    const up = startCli(
      ['up', '--topic-prefix', `${uniqueName('up')}.`],
      cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), REDIS_URL: inject('redisUrl') }),
    );
    await waitFor(() => up.output().includes('"msg":"gpualert_up"'), 'gpualert_up', 30_000);
    expect(up.output()).toMatch(/"mode":"distributed","bus":"kafka","store":"redis"/);
    up.kill('SIGTERM');
    const [code] = await once(up, 'exit');
    expect(code).toBe(0);
  });
});
