import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('timeline without Kafka reads the embedded log, and says so when there is none', async () => {
    const result = await runCli(['timeline', '--from', '2026-06-01T00:00:00Z', '--to', '2026-06-01T01:00:00Z', '--data-dir', '/nonexistent/gpualert']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'error[GA-CLI-USAGE]: gpualert timeline: no KAFKA_BROKERS and no embedded log at /nonexistent/gpualert (run gpualert up, or give --data-dir)',
    );
    const backwards = await runCli(['timeline', '--from', '2026-06-01T01:00:00Z', '--to', '2026-06-01T00:00:00Z']);
    expect(backwards.stderr.trim()).toBe('error[GA-CLI-USAGE]: gpualert timeline: --from must be before --to');
  });

  it('answers bad arguments and bad config with one line and exit 2', async () => {
    const unknown = await runCli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'frobnicate'/);
    const badConfig = await runCli(['up'], { env: cleanEnv({ KAFKA_BROKERS: 'no-port-here' }) });
    expect(badConfig.code).toBe(2);
    expect(badConfig.stderr.trim().split('\n')).toHaveLength(1);
    expect(badConfig.stderr).toMatch(/^error\[GA-CONFIG-INVALID\]: invalid config: KAFKA_BROKERS \(environment\): expected host:port/);
    // Every service's own settings too, checked before anything starts: never a service quietly left out.
    for (const [args, env, said] of [
      [['up'], { GPUALERT_NOTIFIER_PORT: 'abc' }, 'invalid config: GPUALERT_NOTIFIER_PORT (environment): expected a port 0-65535 (got "abc")'],
      [['up', '--engine-port', '70000'], {}, 'invalid config: --engine-port (flag): expected a port 0-65535 (got "70000")'],
      [['up'], { GPUALERT_INTAKE_PORT: 'abc' }, 'invalid config: GPUALERT_INTAKE_PORT (environment): '],
      [['intake'], { GPUALERT_INTAKE_PORT: 'abc', GPUALERT_INTAKE_TOKEN: 'intake-token-0123456789' }, 'invalid config: GPUALERT_INTAKE_PORT (environment): '],
      [
        ['intake'],
        { GPUALERT_INTAKE_PORT: '0x1F91', GPUALERT_INTAKE_TOKEN: 'intake-token-0123456789' },
        'invalid config: GPUALERT_INTAKE_PORT (environment): expected a port 0-65535 (got "0x1F91")',
      ],
      [['up', '--intake-port=-1'], {}, 'invalid config: --intake-port (flag): expected a port 0-65535 (got "-1")'],
      [
        ['up'],
        { GPUALERT_NOTIFIER_TOKEN: 'short' },
        'invalid config: GPUALERT_NOTIFIER_TOKEN (environment): must be at least 16 characters (got a value of 5 characters, not shown)',
      ],
    ] as const) {
      const result = await runCli([...args], { env: cleanEnv(env) });
      expect([result.code, result.stderr.trim().split('\n').length], `${args.join(' ')} ${JSON.stringify(env)}: ${result.stderr}`).toEqual([2, 1]);
      expect(result.stderr).toContain(`error[GA-CONFIG-INVALID]: ${said}`);
    }
  });

  it('`up` runs embedded with no Kafka or Redis and stops cleanly on Ctrl-C', async () => {
    const up = startCli(
      ['up'],
      cleanEnv({ GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1', GPUALERT_DATA_DIR: mkdtempSync(join(tmpdir(), 'gpualert-up-')) }),
    );
    await waitFor(() => up.output().includes('"msg":"gpualert_up"'), 'gpualert_up', 20_000);
    expect(up.output()).toMatch(/"mode":"embedded","bus":"memory","store":"memory","services":\["engine","intake","notifier","usage"\]/);
    // Where each listens, a port of 0 included: the intake here (the engine's /metrics too, on its default or the one given).
    const ports = (
      JSON.parse(
        up
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"gpualert_up"'))!,
      ) as { ports: Record<string, number> }
    ).ports;
    expect(ports.intake).toBeGreaterThan(0);
    // A SIGHUP asks for a reload (none here: no token, no API), never an exit.
    up.kill('SIGHUP');
    await new Promise((r) => setTimeout(r, 300));
    expect(up.exitCode).toBeNull();
    up.kill('SIGINT');
    const [code] = await once(up, 'exit');
    expect(code).toBe(0);
    expect(up.output()).toContain('"msg":"gpualert_stopped"');
  });

  it('`intake` takes a signed delivery from its secrets in the environment, and refuses a secret on the command line', async () => {
    const secret = `whsec_${Buffer.from('cli test secret, thirty-two byte').toString('base64')}`;
    const intake = startCli(['intake', '--port', '0', '--listen', '127.0.0.1'], cleanEnv({ GPUALERT_INTAKE_SECRETS: secret }));
    await waitFor(() => /"port":\d+/.test(intake.output()) && intake.output().includes('intake_listening'), 'intake_listening', 20_000);
    const port = /"port":(\d+)/.exec(intake.output())![1];
    const body = JSON.stringify({ event_id: 'cli-1', kind: 'maintenance', status: 'scheduled', hosts: ['h1'] });
    const { sign } = await import('@gpualert/intake');
    const ts = Math.floor(Date.now() / 1000);
    const response = await fetch(`http://127.0.0.1:${port}/v1/events/generic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': 'm1', 'webhook-timestamp': String(ts), 'webhook-signature': sign(secret, 'm1', ts, body) },
      body,
    });
    expect(response.status).toBe(202);
    expect(intake.output()).not.toContain(secret);
    intake.kill('SIGTERM');
    expect((await once(intake, 'exit'))[0]).toBe(0);
    const refused = await runCli(['intake', '--secret', secret]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/unknown option '--secret'/);
  });

  it('`up --demo` plays the bundled incident, graded alerts within seconds, and its timeline survives the restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gpualert-demo-'));
    const up = startCli(
      ['up', '--demo', '--speed', '600', '--data-dir', dataDir],
      cleanEnv({ GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1' }),
    );
    // Each host's alerts come on their own partition: the lost GPU (the story's last) can be printed
    // before another host's earlier alert, so wait for every line rather than for the last one.
    const expected = [
      /WARNING {2}gpu-node-000 {2}\[maintenance\]/,
      /WARNING {2}gpu-node-000 GPU 2 {2}\[xid\] {2}Xid 13: Graphics Engine Exception on GPU 2 \(×3\)/,
      /WARNING {2}gpu-node-001 GPU 5 {2}\[thermal\] {2}GPU 5 on gpu-node-001 runs 1\d °C hotter than its siblings/,
      /CRITICAL gpu-node-002 GPU 3 {2}\[fallen_off_bus\]/,
    ];
    await waitFor(() => expected.every((line) => line.test(up.output())), 'every alert of the story', 30_000).catch((error: unknown) => {
      throw new Error(`${String(error)}; missing ${expected.filter((line) => !line.test(up.output())).join(' ')}`);
    });
    up.kill('SIGINT');
    expect((await once(up, 'exit'))[0]).toBe(0);
    // gpualert is stopped; the story is still there for the post-mortem
    const timeline = await runCli([
      'timeline',
      '--from',
      '2026-06-01T02:00:00Z',
      '--to',
      '2026-06-01T02:30:00Z',
      '--host',
      'gpu-node-002',
      '--data-dir',
      dataDir,
      '--format',
      'json',
    ]);
    expect(timeline.code).toBe(0);
    const entries = (JSON.parse(timeline.stdout) as { entries: { source: string; title: string }[] }).entries;
    expect(entries.filter((e) => e.source === 'kernel').map((e) => e.title)).toEqual(['Xid 119: GSP RPC Timeout', 'Xid 79: GPU has fallen off the bus']);
    expect(entries.some((e) => e.source === 'alert' && /FIRING critical: GPU 3 on gpu-node-002 has disappeared/.test(e.title))).toBe(true);
    // (the notifier's records carry the wall-clock time they were made, not the demo's 2026-06-01)
  });

  it('`up` switches to Kafka and Redis when they are configured', async () => {
    const up = startCli(
      ['up', '--topic-prefix', `${uniqueName('up')}.`],
      cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), REDIS_URL: inject('redisUrl'), GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1' }),
    );
    await waitFor(() => up.output().includes('"msg":"gpualert_up"'), 'gpualert_up', 30_000);
    expect(up.output()).toMatch(/"mode":"distributed","bus":"kafka","store":"redis"/);
    // the engine, the notifier, the console and the intake's inventory each joined its group
    await waitFor(() => (up.output().match(/"msg":"group_joined"/g) ?? []).length >= 4, 'every consumer group joined', 30_000);
    up.kill('SIGTERM');
    const [code] = await once(up, 'exit');
    expect(code).toBe(0);
  });
});
