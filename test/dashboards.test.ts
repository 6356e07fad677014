import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { debianTool } from './alertmanager/debian-tool.ts';
import { startToolOnFreePort } from './alertmanager/harness.ts';
import { activeTargets, dashboards, instant, panelsOf, resolveVariables, substitute } from './prometheus/grafana-queries.ts';
import { FakeNvidiaSmi } from './infra/fake-nvidia-smi.ts';
import { onFreePort, PORT_TAKEN, PortTaken } from './infra/free-port.ts';
import { cleanEnv, startCli } from './infra/run-cli.ts';
import { waitFor } from './infra/wait-for.ts';

const ROOT = new URL('../', import.meta.url);
const RULES = new URL('deploy/prometheus/gpualert.rules.yml', ROOT);
const readJson = (url: URL) => JSON.parse(readFileSync(url, 'utf8')) as unknown;

/** Grafana's published schemas (test/fixtures/grafana/README.md names their source), draft-07. */
function validator(file: string) {
  const ajv = new Ajv({ allErrors: true, strict: false });
  return ajv.compile(readJson(new URL(`test/fixtures/grafana/${file}`, ROOT)) as object);
}

describe("the Grafana dashboards, against Grafana's published schemas", () => {
  it('there are the four the deployment provisions: fleet, GPU, host and incident', () => {
    expect(dashboards.map((d) => d.board.uid)).toEqual(['gpualert-fleet', 'gpualert-gpu', 'gpualert-host', 'gpualert-incident']);
  });

  const dashboard = validator('dashboard.jsonschema.json');
  const query = validator('prometheus.jsonschema.json');
  for (const { file, board } of dashboards) {
    it(`${file} is a valid Grafana dashboard, each of its queries a valid Prometheus query`, () => {
      expect(dashboard(board), JSON.stringify(dashboard.errors?.slice(0, 5), null, 1)).toBe(true);
      const targets = panelsOf(board).flatMap((p) => p.targets ?? []);
      expect(targets.length).toBeGreaterThan(5);
      for (const target of targets) expect(query(target), `${target.expr}: ${JSON.stringify(query.errors?.slice(0, 3))}`).toBe(true);
      // Unique panel ids: Grafana keys a panel's state (and links to it) by id.
      const ids = panelsOf(board).map((p) => (p as { id?: number }).id);
      expect(new Set(ids).size).toBe(ids.length);
    });
  }

  it('the schema check is not a rubber stamp: a misspelt field and a wrong type are refused', () => {
    const board = structuredClone(dashboards[0]!.board) as unknown as Record<string, unknown>;
    expect(dashboard({ ...board, schemaVersoin: 39 })).toBe(false);
    expect(dashboard({ ...board, panels: [{ type: 'stat', gridPos: { h: 'tall', w: 4, x: 0, y: 0 } }] })).toBe(false);
    expect(query({ refId: 'A' })).toBe(false); // no expr
  });
});

describe('every panel and recording rule against a real Prometheus scraping `gpualert up --demo`', () => {
  const cleanups: (() => Promise<void>)[] = [];
  let base = '';
  let intakeBase = '';
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-dashboards-'));
    // `up` runs on without /metrics when its engine port is taken: that start is stopped, and `up`
    // started afresh (its own data dir, the demo from the start) on another port.
    const { up, enginePort } = await onFreePort(async (port) => {
      const started = startCli(
        ['up', '--demo', '--speed', '5000', '--data-dir', join(dir, `up-${port}`), '--log-format', 'json'],
        cleanEnv({
          GPUALERT_ENGINE_PORT: String(port),
          GPUALERT_INTAKE_PORT: '0',
          GPUALERT_NOTIFIER_PORT: '0',
          GPUALERT_ENGINE_LISTEN: '127.0.0.1',
          GPUALERT_INTAKE_LISTEN: '127.0.0.1',
          GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
          GPUALERT_NOTIFIER_TOKEN: 'dashboards-test-token-0123',
        }),
      );
      const closed = new Promise((resolve) => started.once('close', resolve));
      const stop = async () => {
        if (started.exitCode === null && started.signalCode === null) started.kill('SIGTERM');
        await closed;
      };
      cleanups.push(stop);
      await waitFor(() => /"msg":"gpualert_up"/.test(started.output()) || started.exitCode !== null, '`gpualert up` to start', 60_000);
      if (started.exitCode !== null) throw new Error(`gpualert up exited with ${started.exitCode}:\n${started.output().slice(-2000)}`);
      if (/engine_metrics_port_unavailable/.test(started.output()) && PORT_TAKEN.test(started.output())) {
        await stop();
        throw new PortTaken(port, started.output());
      }
      return { up: started, enginePort: port };
    });
    // An agent beside it, as on a GPU host (a stand-in nvidia-smi, the in-process bus): the agents' job has a target that answers.
    const smi = new FakeNvidiaSmi();
    const agent = startCli(
      [
        'agent',
        '--host',
        'gpu-node-000',
        '--nvidia-smi',
        smi.path,
        '--kernel-source',
        'none',
        '--metadata',
        'none',
        '--port',
        '0',
        '--listen',
        '127.0.0.1',
        '--log-format',
        'json',
      ],
      cleanEnv(),
    );
    const agentClosed = new Promise((resolve) => agent.once('close', resolve));
    cleanups.push(async () => {
      if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGTERM');
      await agentClosed;
    });
    await waitFor(() => agent.output().includes('"msg":"agent_started"') || agent.exitCode !== null, 'the agent to start', 30_000);
    const agentPort = (
      JSON.parse(
        agent
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"agent_started"')) ?? '{}',
      ) as { port?: number }
    ).port;
    const ports =
      (
        JSON.parse(
          up
            .output()
            .split('\n')
            .find((l) => l.includes('"msg":"gpualert_up"')) ?? '{}',
        ) as { ports?: Record<string, number> }
      ).ports ?? {};
    // The shipped config and rules as they are, but for where things are (the services' host names,
    // the rules file's path) and how often (1 s, not 15 s and 30 s, so the test waits seconds).
    const rules = join(dir, 'gpualert.rules.yml');
    writeFileSync(rules, readFileSync(RULES, 'utf8').replace('interval: 30s', 'interval: 1s'));
    const shipped = readFileSync(new URL('deploy/prometheus/prometheus.yml', ROOT), 'utf8');
    const config = [
      ['engine:9470', `127.0.0.1:${enginePort}`],
      ['notifier:9095', `127.0.0.1:${ports.notifier}`],
      ['intake:9468', `127.0.0.1:${ports.intake}`],
      ['gpu-node-000:9469', `127.0.0.1:${agentPort}`],
      ['- gpualert.rules.yml', `- ${rules}`],
      ['scrape_interval: 15s', 'scrape_interval: 1s'],
      ['evaluation_interval: 30s', 'evaluation_interval: 1s'],
    ].reduce((text, [from, to]) => {
      expect(text, `the shipped prometheus.yml has ${from}`).toContain(from);
      return text.replace(from!, to!);
    }, shipped);
    writeFileSync(join(dir, 'prometheus.yml'), config);
    intakeBase = `http://127.0.0.1:${ports.intake}`;
    const { tool: prometheus, port } = await startToolOnFreePort(
      debianTool('prometheus', 'prometheus'),
      (port) => [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      cleanups,
    );
    base = `http://127.0.0.1:${port}`;
    // The demo played to its end (the lost GPU is its last alert) and the recording rules evaluated since.
    await waitFor(
      async () => {
        try {
          return (
            (await instant(base, 'gpualert_alert_started_timestamp_seconds{category="fallen_off_bus"}')).length > 0 &&
            (await instant(base, 'gpualert:gpu_baseline_band_upper')).length > 0 &&
            (await instant(base, 'count_over_time(gpualert_hosts[1m]) > 2')).length > 0
          );
        } catch {
          return false;
        }
      },
      `Prometheus to have scraped the demo's alerts (up said:\n${up.output().slice(-1500)}\nprometheus said:\n${prometheus.output().slice(-1500)})`,
      90_000,
    );
  }, 240_000);

  it('every target of the shipped scrape config is up: the engine, the notifier, the intake and an agent', async () => {
    await waitFor(
      async () => {
        const targets = await activeTargets(base);
        return targets.length === 4 && targets.every((t) => t.health === 'up');
      },
      'every target up',
      30_000,
    ).catch(() => undefined);
    const targets = await activeTargets(base);
    expect(targets.map((t) => [t.labels.job, t.health, t.lastError]).sort()).toEqual([
      ['gpualert-agent', 'up', ''],
      ['gpualert-engine', 'up', ''],
      ['gpualert-intake', 'up', ''],
      ['gpualert-notifier', 'up', ''],
    ]);
    // Each job's own metrics reached Prometheus, not only an answer on its port (the intake counts
    // requests by outcome: one unsigned delivery gives it a series).
    expect((await fetch(`${intakeBase}/v1/events/generic`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(401);
    await waitFor(async () => (await instant(base, 'gpualert_intake_requests_total')).length > 0, "the intake's counter scraped", 10_000);
    const own = await instant(base, 'count by (job) ({job=~"gpualert-.+", __name__=~"gpualert_.+"})');
    expect(own.map((series) => series.metric.job).sort()).toEqual(['gpualert-agent', 'gpualert-engine', 'gpualert-intake', 'gpualert-notifier']);
  });

  it('every recording rule gives at least one series', async () => {
    const groups = (parseYaml(readFileSync(RULES, 'utf8')) as { groups: { rules: { record: string }[] }[] }).groups;
    const records = groups.flatMap((g) => g.rules.map((r) => r.record));
    expect(records.length).toBeGreaterThanOrEqual(7);
    for (const record of records) expect((await instant(base, record)).length, record).toBeGreaterThan(0);
    // The check can fail: a selector nothing matches gives no series.
    expect(await instant(base, 'gpualert_gpu_state{host="no-such-host"}')).toEqual([]);
  });

  for (const { file, board } of dashboards) {
    it(`${file}: every panel's PromQL gives at least one series, with the variables Grafana would pick`, async () => {
      const variables = await resolveVariables(base, board);
      let checked = 0;
      for (const panel of panelsOf(board)) {
        for (const target of panel.targets ?? []) {
          const expr = substitute(target.expr, variables);
          expect(expr, `${panel.title}: a variable left unresolved`).not.toMatch(/\$\w/);
          expect((await instant(base, expr)).length, `${board.uid} / ${panel.title} / ${target.refId}: ${expr}`).toBeGreaterThan(0);
          checked += 1;
        }
      }
      expect(checked).toBeGreaterThan(5);
    }, 60_000);
  }

  it("the fleet grid shows the demo's faulty GPUs in their colours, and the others green despite the maintenance notice", async () => {
    const states = new Map((await instant(base, 'gpualert_gpu_state')).map((s) => [`${s.metric.host}/${s.metric.gpu}`, Number(s.value[1])]));
    expect(states.size).toBe(24);
    // The demo: Xid 13 on gpu-node-000 GPU 2 (warning), GPU 5 of gpu-node-001 running hot (warning), GPU 3 of gpu-node-002 lost (critical).
    const faulty = [...states].filter(([, v]) => v > 0).sort();
    expect(faulty).toEqual([
      ['gpu-node-000/2', 2],
      ['gpu-node-001/5', 2],
      ['gpu-node-002/3', 4],
    ]);
    expect((await instant(base, 'gpualert_alert_started_timestamp_seconds{host="gpu-node-000",category="maintenance"}')).length).toBe(1);
  });

  it("the GPU dashboard on the demo's hot GPU shows it above its own band and above its siblings", async () => {
    const gpu = dashboards.find((d) => d.board.uid === 'gpualert-gpu')!.board;
    const variables = await resolveVariables(base, gpu, { host: 'gpu-node-001', gpu: '5' });
    const panel = (title: string) => panelsOf(gpu).find((p) => p.title === title)!;
    /** Each query of the panel, its temperature series' value. */
    const temperatures = async (title: string) =>
      Promise.all(
        panel(title).targets!.map(async (t) => {
          const series = await instant(base, substitute(t.expr, variables));
          return Number((series.find((s) => s.metric.metric === 'temp_c') ?? series[0]!).value[1]);
        }),
      );
    const [value, normal, top, bottom] = await temperatures('Temperature in its own band');
    expect(value).toBeGreaterThan(top!);
    expect(bottom!).toBeLessThan(normal!);
    expect(normal).toBeLessThan(top!);
    const [z] = await temperatures('Deviation from its own normal');
    expect(z).toBeGreaterThan(4);
    const [apart] = await temperatures('Apart from its siblings');
    expect(apart).toBeGreaterThan(8);
    // Its sibling GPU 4 sits inside its band: the panel tells them apart.
    const sibling = await resolveVariables(base, gpu, { host: 'gpu-node-001', gpu: '4' });
    const [siblingValue, , siblingTop] = await Promise.all(
      panel('Temperature in its own band').targets!.map(async (t) => Number((await instant(base, substitute(t.expr, sibling)))[0]!.value[1])),
    );
    expect(siblingValue).toBeLessThan(siblingTop!);
  });

  it('promtool accepts the shipped Prometheus config and recording rules, and the rules pass their unit tests', () => {
    const promtool = join(debianTool('prometheus', 'prometheus'), '..', 'promtool');
    const tests = new URL('test/prometheus/gpualert.rules.test.yml', ROOT).pathname;
    for (const args of [
      ['check', 'config', new URL('deploy/prometheus/prometheus.yml', ROOT).pathname],
      ['check', 'rules', RULES.pathname],
      ['test', 'rules', tests],
    ]) {
      const result = spawnSync(promtool, args, { encoding: 'utf8' });
      expect(result.status, `${args.join(' ')}: ${result.stdout}${result.stderr}`).toBe(0);
    }
    // The unit tests can fail: a band of ± 3 spreads where the rule says 4 is caught.
    const wrong = join(mkdtempSync(join(tmpdir(), 'gpualert-rules-test-')), 'wrong.test.yml');
    writeFileSync(
      wrong,
      readFileSync(tests, 'utf8').replace('value: 69.4', 'value: 67.4').replace('../../deploy/prometheus/gpualert.rules.yml', RULES.pathname),
    );
    const failed = spawnSync(promtool, ['test', 'rules', wrong], { encoding: 'utf8' });
    expect(failed.status).not.toBe(0);
    expect(failed.stdout + failed.stderr).toMatch(/gpualert:gpu_baseline_band_upper/);
  });
});
