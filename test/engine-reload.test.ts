import { once } from 'node:events';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { cleanEnv, startCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The engine's /metrics, as Prometheus reads it. */
async function metric(port: number, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('gpualert engine on SIGHUP', () => {
  it('keeps its rules when the directory is broken (each error at its file:line, the metric at 0), and takes them when it is fixed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-rules-'));
    cpSync(new URL('../rules', import.meta.url).pathname, dir, { recursive: true });
    const env = cleanEnv({
      KAFKA_BROKERS: inject('kafkaBrokers'),
      REDIS_URL: inject('redisUrl'),
      GPUALERT_TOPIC_PREFIX: `${uniqueName('reload')}.`,
      GPUALERT_KEY_PREFIX: `${uniqueName('reload')}:`,
      GPUALERT_PARTITIONS: '3',
      GPUALERT_ENGINE_PORT: '0',
      GPUALERT_ENGINE_LISTEN: '127.0.0.1',
      GPUALERT_LOG_FORMAT: 'json',
    });
    const engine = startCli(['engine', '--rules', dir], env);
    cleanups.push(async () => {
      if (engine.exitCode === null) {
        engine.kill('SIGTERM');
        await once(engine, 'exit');
      }
    });
    await waitFor(() => /engine_started/.test(engine.output()) || engine.exitCode !== null, 'gpualert engine', 60_000);
    const port = Number(/"metrics_port":(\d+)/.exec(engine.output())?.[1]);
    expect(port, engine.output()).toBeGreaterThan(0);
    expect(await metric(port, 'gpualert_config_last_reload_successful')).toBe(1);

    const file = join(dir, 'templates/h100.yaml');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, good.replace('gpu-temp-high: { above: 87, recover_below: 82 }', 'gpu-temp-high: { above: hot, recover_below: 82 }'));
    engine.kill('SIGHUP');
    await waitFor(() => /config_reload_failed/.test(engine.output()) || engine.exitCode !== null, 'the refused reload', 30_000);
    expect(engine.exitCode).toBeNull();
    const failed = engine
      .output()
      .split('\n')
      .find((l) => l.includes('config_reload_failed'));
    expect(failed).toMatch(/h100\.yaml:\d+/);
    // Scrapes close together share one render (METRICS_RENDER_REUSE_MS): the next one says it.
    await waitFor(async () => (await metric(port, 'gpualert_config_last_reload_successful')) === 0, 'the metric to say the reload failed', 30_000);

    writeFileSync(file, good.replace('gpu-temp-high: { above: 87, recover_below: 82 }', 'gpu-temp-high: { above: 70, recover_below: 65 }'));
    engine.kill('SIGHUP');
    await waitFor(() => /config_reloaded/.test(engine.output()) || engine.exitCode !== null, 'the reload', 30_000);
    expect(engine.exitCode).toBeNull();
    await waitFor(async () => (await metric(port, 'gpualert_config_last_reload_successful')) === 1, 'the metric to say the reload took', 30_000);
  });
});

describe('gpualert up reads its rules and routes again', () => {
  it('on POST /-/reload a broken rules directory is refused with its file:line and the running rules kept; on SIGHUP the fixed one takes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-up-rules-'));
    cpSync(new URL('../rules', import.meta.url).pathname, dir, { recursive: true });
    const token = 'up-reload-token-0123456789';
    const up = startCli(
      ['up', '--rules', dir, '--log-format', 'json', '--notifier-port', '0', '--data-dir', mkdtempSync(join(tmpdir(), 'gpualert-up-reload-'))],
      cleanEnv({
        GPUALERT_INTAKE_PORT: '0',
        GPUALERT_INTAKE_LISTEN: '127.0.0.1',
        GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
        GPUALERT_ENGINE_PORT: '0',
        GPUALERT_ENGINE_LISTEN: '127.0.0.1',
        GPUALERT_NOTIFIER_TOKEN: token,
      }),
    );
    cleanups.push(async () => {
      if (up.exitCode === null) {
        up.kill('SIGINT');
        await once(up, 'exit');
      }
    });
    await waitFor(() => up.output().includes('"msg":"gpualert_up"') || up.exitCode !== null, 'gpualert up', 60_000);
    const ports = /"ports":\{([^}]*)\}/.exec(up.output())?.[1] ?? '';
    const enginePort = Number(/"engine":(\d+)/.exec(ports)?.[1]);
    const notifierPort = Number(/"notifier":(\d+)/.exec(ports)?.[1]);
    expect(enginePort, up.output()).toBeGreaterThan(0);
    expect(notifierPort, up.output()).toBeGreaterThan(0);
    expect(await metric(enginePort, 'gpualert_config_last_reload_successful')).toBe(1);
    const reload = () => fetch(`http://127.0.0.1:${notifierPort}/-/reload`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });

    const file = join(dir, 'templates/h100.yaml');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, good.replace('gpu-temp-high: { above: 87, recover_below: 82 }', 'gpu-temp-high: { above: hot, recover_below: 82 }'));
    const refused = await reload();
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as { errors: string[] };
    expect(body.errors.join('\n')).toMatch(/rules \(the running ones kept; the routes were reloaded\): .*h100\.yaml:\d+/);
    expect(up.exitCode).toBeNull();
    await waitFor(
      async () => (await metric(enginePort, 'gpualert_config_last_reload_successful')) === 0,
      "the engine's metric to say the reload failed",
      30_000,
    );

    writeFileSync(file, good.replace('gpu-temp-high: { above: 87, recover_below: 82 }', 'gpu-temp-high: { above: 70, recover_below: 65 }'));
    up.kill('SIGHUP');
    await waitFor(() => /config_reloaded/.test(up.output()) || up.exitCode !== null, 'the reload', 30_000);
    expect(up.exitCode).toBeNull();
    await waitFor(async () => (await metric(enginePort, 'gpualert_config_last_reload_successful')) === 1, "the engine's metric to say the reload took", 30_000);
    const taken = await reload();
    expect(taken.status).toBe(200);
  });
});
