import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { envelopeMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { hostName, syntheticFleet } from '@gpualert/test-support';
import { newEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { debianTool } from '../alertmanager/debian-tool.ts';
import { startToolOnFreePort, tempDir } from '../alertmanager/harness.ts';
import { DnsServer } from '../infra/dns-server.ts';
import { onFreePort, PORT_TAKEN, PortTaken } from '../infra/free-port.ts';
import { cleanEnv, startCli } from '../infra/run-cli.ts';
import { partitionsHeld } from '../infra/partitions-held.ts';
import { uniqueName, waitFor } from '../infra/wait-for.ts';
import { activeTargets, dashboards, instant, labelValues, panelsOf, substitute, variableQuery, type Dashboard } from './grafana-queries.ts';

/**
 * Several engines, as Prometheus finds them with each shipped configuration: two `gpualert engine`
 * processes share the samples topic (one consumer group on the test run's Kafka, state in its
 * Redis), each judging the hosts of its partitions and exporting only those. A real Prometheus
 * (Debian's) scrapes them with deploy/prometheus/prometheus.yml (the engines listed),
 * deploy/compose/prometheus.yml (the engines found by DNS, as `docker compose up --scale engine=2`
 * puts them behind one name) and deploy/prometheus/kubernetes.yml (each engine a pod): both engines
 * are targets and up, each exports the hosts it owns and no other, and the recording rules and the
 * Grafana panels see every host of both.
 *
 * The two engines listen on one port at two loopback addresses, as two containers or pods do.
 */
const ROOT = new URL('../../', import.meta.url);
const RULES = new URL('deploy/prometheus/gpualert.rules.yml', ROOT);
const HOSTS = 12;
const GPUS = 8;
const PARTITIONS = 6;
const ENGINE_ADDRESSES = ['127.0.0.2', '127.0.0.3'] as const;
/** Where the compose case's DNS server answers for `engine` (port 53: root only). */
const DNS_ADDRESS = '127.0.53.1';
const SAMPLE_INTERVAL_MS = 15_000;

type Engine = ReturnType<typeof startCli> & { address: string };

const cleanups: (() => Promise<void>)[] = [];
const allHosts = Array.from({ length: HOSTS }, (_, h) => hostName(h)).sort();
let port = 0;
let engines: Engine[] = [];
/** Each engine's address, the hosts its own /metrics exports. */
const owned = new Map<string, string[]>();
/** One host of each engine with an Xid 79 on its GPU 0: alerts and incidents on both. */
let faulty: string[] = [];
let loadRunning = false;
let loadDone: Promise<void> = Promise.resolve();

afterAll(async () => {
  loadRunning = false;
  await loadDone;
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The hosts an engine's own /metrics names in `gpualert_gpu_state`. */
async function exportedHosts(address: string): Promise<string[]> {
  const text = await (await fetch(`http://${address}:${port}/metrics`)).text();
  const hosts = new Set<string>();
  for (const line of text.split('\n')) {
    const host = /^gpualert_gpu_state\{[^}]*\bhost="([^"]+)"/.exec(line)?.[1];
    if (host !== undefined) hosts.add(host);
  }
  return [...hosts].sort();
}

async function stop(engine: Engine): Promise<void> {
  if (engine.exitCode !== null || engine.signalCode !== null) return;
  const exited = once(engine, 'exit');
  engine.kill('SIGTERM');
  await exited;
}

beforeAll(async () => {
  const prefix = `${uniqueName('engines')}.`;
  const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: PARTITIONS });
  await bus.ensureTopics(Object.values(TOPICS));
  cleanups.push(() => bus.close());

  // Two engines on one port at two addresses; started again on another port when something took it.
  engines = await onFreePort(async (p) => {
    const started: Engine[] = [];
    for (const address of ENGINE_ADDRESSES) {
      const engine = Object.assign(
        startCli(
          ['engine'],
          cleanEnv({
            KAFKA_BROKERS: inject('kafkaBrokers'),
            REDIS_URL: inject('redisUrl'),
            GPUALERT_TOPIC_PREFIX: prefix,
            GPUALERT_KEY_PREFIX: `${prefix.slice(0, -1)}:`,
            GPUALERT_PARTITIONS: String(PARTITIONS),
            GPUALERT_ENGINE_PORT: String(p),
            GPUALERT_ENGINE_LISTEN: address,
            GPUALERT_LOG_FORMAT: 'json',
          }),
        ),
        { address },
      );
      started.push(engine);
      await waitFor(
        () => /engine_started|engine_metrics_port_unavailable/.test(engine.output()) || engine.exitCode !== null,
        `the engine on ${address}`,
        60_000,
      );
      if (/engine_metrics_port_unavailable/.test(engine.output()) && PORT_TAKEN.test(engine.output())) {
        for (const e of started) await stop(e);
        throw new PortTaken(p, engine.output());
      }
      if (engine.exitCode !== null) throw new Error(`the engine on ${address} exited with ${engine.exitCode}:\n${engine.output().slice(-2000)}`);
    }
    port = p;
    return started;
  });
  for (const engine of engines) cleanups.push(() => stop(engine));
  // One consumer group: after the second one joined, each holds half the partitions.
  await waitFor(
    () => engines.every((e) => partitionsHeld(e.output()) > 0) && partitionsHeld(engines[0]!.output()) === partitionsHeld(engines[1]!.output()),
    'the two engines to share the partitions',
    60_000,
  );

  // The fleet's samples as their time comes (the last five minutes at once, then live), so no host goes silent.
  const start = Date.now() - 5 * 60_000;
  const fleet = [...syntheticFleet({ hosts: HOSTS, gpusPerHost: GPUS, start, minutes: 30, intervalMs: SAMPLE_INTERVAL_MS, seed: 33 })];
  await bus.publish(TOPICS.hostInventory, fleet.filter((e) => e.type === 'host.inventory').map(envelopeMessage));
  const samples = fleet.filter((e) => e.type === 'gpu.sample');
  loadRunning = true;
  loadDone = (async () => {
    let next = 0;
    while (loadRunning && next < samples.length) {
      const due: Envelope[] = [];
      while (next < samples.length && Date.parse(samples[next]!.ts) <= Date.now()) due.push(samples[next++]!);
      if (due.length > 0) await bus.publish(TOPICS.gpuSamples, due.map(envelopeMessage));
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  await waitFor(
    async () => (await Promise.all(ENGINE_ADDRESSES.map(exportedHosts))).flat().length >= HOSTS,
    `the engines to export the fleet (they said:\n${engines.map((e) => e.output().slice(-1000)).join('\n')})`,
    60_000,
  );
  for (const address of ENGINE_ADDRESSES) owned.set(address, await exportedHosts(address));

  // An Xid 79 on GPU 0 of one host of each engine.
  faulty = ENGINE_ADDRESSES.map((address) => owned.get(address)![0]!);
  const gpu0 = (samples[0] as EnvelopeOf<'gpu.sample'>).data.gpus[0]!.pci_bus!;
  await bus.publish(
    TOPICS.kernelEvents,
    faulty.map((host) =>
      envelopeMessage(
        newEnvelope({
          type: 'kernel.event',
          host,
          source: 'kernel/several-engines-test',
          data: { kind: 'xid', xid: 79, pci_bus: gpu0, severity: 'critical', message: `NVRM: Xid (PCI:${gpu0}): 79, GPU has fallen off the bus.`, count: 1 },
        }),
      ),
    ),
  );
  await waitFor(
    async () => {
      const texts = await Promise.all(ENGINE_ADDRESSES.map(async (a) => (await fetch(`http://${a}:${port}/metrics`)).text()));
      return faulty.every((host, i) => texts[i]!.includes(`gpualert_gpu_state{host="${host}",gpu="0"} 4`));
    },
    'each engine to judge its Xid 79 critical',
    60_000,
  );
}, 240_000);

describe('two engines on one samples topic', () => {
  it('each exports only the hosts it owns: some each, none twice, every host once', () => {
    const [a, b] = ENGINE_ADDRESSES.map((address) => owned.get(address)!);
    expect(a!.length).toBeGreaterThan(0);
    expect(b!.length).toBeGreaterThan(0);
    expect(a!.filter((h) => b!.includes(h))).toEqual([]);
    expect([...a!, ...b!].sort()).toEqual(allHosts);
  });
});

/** The shipped rules at the 1 s interval the test waits on; its path for the config. */
function rulesFile(dir: string): string {
  const file = join(dir, 'gpualert.rules.yml');
  writeFileSync(file, readFileSync(RULES, 'utf8').replace('interval: 30s', 'interval: 1s'));
  return file;
}

/** The shipped text with each `from` replaced (each must be there): where things are, and how often. */
function replaced(shipped: string, replacements: readonly (readonly [string, string])[]): string {
  return replacements.reduce((text, [from, to]) => {
    expect(text, `the shipped file has ${from}`).toContain(from);
    return text.replace(from, to);
  }, shipped);
}

/** Debian's Prometheus on `config`; `wrap` gives the command line it runs under (the compose case: a mount namespace of its own). */
async function prometheus(dir: string, config: string, wrap: (argv: string[]) => string[] = (argv) => argv) {
  writeFileSync(join(dir, 'prometheus.yml'), config);
  const local: (() => Promise<void>)[] = [];
  cleanups.push(async () => {
    for (const c of local.splice(0).reverse()) await c();
  });
  const argv = (p: number) =>
    wrap([
      debianTool('prometheus', 'prometheus'),
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, `data-${p}`)}`,
      `--web.listen-address=127.0.0.1:${p}`,
    ]);
  const { tool, port: listening } = await startToolOnFreePort(argv(0)[0]!, (p) => argv(p).slice(1), local);
  return {
    base: `http://127.0.0.1:${listening}`,
    tool,
    stop: async () => {
      for (const c of local.splice(0).reverse()) await c();
    },
  };
}

/** What a shipped configuration must show of the two engines, through a real Prometheus at `base`. */
async function seesBothEngines(base: string, said: () => string): Promise<void> {
  // Scraped, and the rules evaluated since, for every host and both faults.
  await waitFor(
    async () => {
      try {
        const worst = await instant(base, 'gpualert:gpu_state:max_by_host');
        const incidents = await instant(base, 'gpualert_incident_open');
        return worst.length === HOSTS && faulty.every((host) => incidents.some((s) => s.metric.host === host));
      } catch {
        return false;
      }
    },
    `Prometheus to have scraped both engines and evaluated the rules (prometheus said:\n${said().slice(-1500)})`,
    60_000,
  );
  // What follows is the steady state. With a 1 s interval a scrape also times out at 1 s, and on a loaded
  // machine one that does leaves its engine's series stale until the next: so the state is looked at again a
  // few times before it fails, and the failure says how each target's last scrape went.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await steadyState(base);
      return;
    } catch (error) {
      if (attempt === 4) {
        const health = (await activeTargets(base)).map((t) => `${t.scrapeUrl}: ${t.health} ${t.lastError}`).join('; ');
        throw new Error(`${error instanceof Error ? error.message : String(error)} (after ${attempt} looks; the targets: ${health})`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
}

async function steadyState(base: string): Promise<void> {
  // Both engines are targets of the engines' job, and up.
  const targets = (await activeTargets(base)).filter((t) => t.labels.job === 'gpualert-engine');
  expect(targets.map((t) => [new URL(t.scrapeUrl).host, t.health, t.lastError]).sort()).toEqual(
    ENGINE_ADDRESSES.map((address) => [`${address}:${port}`, 'up', '']),
  );
  const addressOf = new Map(targets.map((t) => [t.labels.instance!, new URL(t.scrapeUrl).hostname]));

  // Each target's series name the hosts its engine owns, and no other.
  const byInstance = new Map<string, string[]>();
  for (const s of await instant(base, 'count by (instance, host) (gpualert_gpu_state{job="gpualert-engine"})')) {
    byInstance.set(s.metric.instance!, [...(byInstance.get(s.metric.instance!) ?? []), s.metric.host!].sort());
  }
  expect(byInstance.size).toBe(2);
  for (const [instance, hosts] of byInstance) expect(hosts, instance).toEqual(owned.get(addressOf.get(instance)!));

  // The recording rules add the engines up: every host, both faults, the alerts of both.
  const worst = await instant(base, 'gpualert:gpu_state:max_by_host');
  expect(worst.map((s) => s.metric.host).sort()).toEqual(allHosts);
  expect(worst.filter((s) => s.value[1] === '4').map((s) => s.metric.host)).toEqual(expect.arrayContaining(faulty));
  expect(Number((await instant(base, 'gpualert:gpus_alerting:count'))[0]!.value[1])).toBeGreaterThanOrEqual(2);
  const critical = await instant(base, 'gpualert:alerts_firing:sum_by_severity{severity="critical"}');
  const perEngine = await instant(base, 'sum by (instance) (gpualert_alerts_firing{severity="critical"})');
  expect(perEngine.map((s) => Number(s.value[1]) > 0)).toEqual([true, true]);
  expect(Number(critical[0]!.value[1])).toBe(perEngine.reduce((sum, s) => sum + Number(s.value[1]), 0));

  // The fleet dashboard: the fleet's totals and grid over both engines, the alerts and incidents of both.
  const fleet = panelsOf(board('gpualert-fleet')).flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const panel = async (expr: string) => {
    expect(fleet, 'a query of the fleet dashboard').toContain(expr);
    return instant(base, expr);
  };
  expect(Number((await panel('sum(gpualert_hosts)'))[0]!.value[1])).toBe(HOSTS);
  expect(Number((await panel('sum(gpualert_gpus)'))[0]!.value[1])).toBe(HOSTS * GPUS);
  const grid = await panel('gpualert_gpu_state');
  expect(grid.length).toBe(HOSTS * GPUS);
  expect([...new Set(grid.map((s) => s.metric.host))].sort()).toEqual(allHosts);
  for (const expr of ['gpualert_alert_started_timestamp_seconds * 1000', 'gpualert_incident_open']) {
    const hosts = (await panel(expr)).map((s) => s.metric.host);
    for (const host of faulty) expect(hosts, `${expr}: ${host}`).toContain(host);
  }

  // The GPU and host dashboards offer every host of both engines; the incident one both incidents.
  for (const uid of ['gpualert-gpu', 'gpualert-host']) {
    const host = board(uid).templating.list.find((v) => v.name === 'host')!;
    expect((await labelValues(base, variableQuery(host))).sort(), uid).toEqual(allHosts);
  }
  const incident = board('gpualert-incident');
  const incidents = await labelValues(base, variableQuery(incident.templating.list.find((v) => v.name === 'incident')!));
  const incidentHosts = await Promise.all(
    incidents.map(async (id) =>
      labelValues(base, substitute(variableQuery(incident.templating.list.find((v) => v.name === 'host')!), new Map([['incident', id]]))),
    ),
  );
  expect(incidentHosts.flat()).toEqual(expect.arrayContaining(faulty));

  // And on a host of each engine, every panel of the GPU, host and incident dashboards has data.
  for (const [i, host] of faulty.entries()) {
    const values = new Map([
      ['host', host],
      ['gpu', '0'],
      ['incident', incidents[incidentHosts.findIndex((hosts) => hosts.includes(host))]!],
    ]);
    for (const uid of ['gpualert-gpu', 'gpualert-host', 'gpualert-incident']) {
      for (const p of panelsOf(board(uid))) {
        for (const target of p.targets ?? []) {
          const expr = substitute(target.expr, values);
          expect((await instant(base, expr)).length, `${uid} / ${p.title} / ${target.refId} on the host of engine ${i + 1}: ${expr}`).toBeGreaterThan(0);
        }
      }
    }
  }
}

function board(uid: string): Dashboard {
  return dashboards.find((d) => d.board.uid === uid)!.board;
}

describe('Prometheus with the shipped configurations scrapes both engines, and the rules and dashboards see every host', () => {
  it('promtool accepts deploy/compose/prometheus.yml with the rules mounted beside it, as compose mounts them', () => {
    const dir = tempDir('compose-promtool');
    copyFileSync(new URL('deploy/compose/prometheus.yml', ROOT), join(dir, 'prometheus.yml'));
    copyFileSync(RULES, join(dir, 'gpualert.rules.yml'));
    const checked = spawnSync(join(debianTool('prometheus', 'prometheus'), '..', 'promtool'), ['check', 'config', join(dir, 'prometheus.yml')], {
      encoding: 'utf8',
    });
    expect(checked.status, checked.stdout + checked.stderr).toBe(0);
  });

  it('deploy/prometheus/prometheus.yml, the two engines listed as its comment says', async () => {
    const dir = tempDir('several-engines-static');
    const config = replaced(readFileSync(new URL('deploy/prometheus/prometheus.yml', ROOT), 'utf8'), [
      ['targets: ["engine:9470"]', `targets: [${ENGINE_ADDRESSES.map((a) => `"${a}:${port}"`).join(', ')}]`],
      ['- gpualert.rules.yml', `- ${rulesFile(dir)}`],
      ['scrape_interval: 15s', 'scrape_interval: 1s'],
      ['evaluation_interval: 30s', 'evaluation_interval: 1s'],
    ]);
    const { base, tool, stop } = await prometheus(dir, config);
    await seesBothEngines(base, () => tool.output());
    await stop();
  }, 120_000);

  it('deploy/prometheus/kubernetes.yml, each engine a pod of its own (pods as Kubernetes discovery describes them)', async () => {
    // Debian's Prometheus is built without Kubernetes discovery and there is no API server here: the
    // pods come from a file, with the labels Kubernetes discovery gives them (test/prometheus/kubernetes-scrape.test.ts).
    const dir = tempDir('several-engines-k8s');
    const pods = ENGINE_ADDRESSES.map((address, i) => ({
      targets: [`${address}:${port}`],
      labels: {
        __meta_kubernetes_namespace: 'gpualert',
        __meta_kubernetes_pod_name: `gpualert-engine-7d9f-${i}`,
        __meta_kubernetes_pod_node_name: `node-${i}`,
        __meta_kubernetes_pod_label_app_kubernetes_io_name: 'gpualert-engine',
        __meta_kubernetes_pod_container_port_name: 'http',
        __meta_kubernetes_pod_annotation_prometheus_io_scrape: 'true',
        __meta_kubernetes_pod_annotation_prometheus_io_port: String(port),
        __meta_kubernetes_pod_annotation_prometheus_io_path: '/metrics',
      },
    }));
    writeFileSync(join(dir, 'pods.json'), JSON.stringify(pods));
    const shipped = parseYaml(readFileSync(new URL('deploy/prometheus/kubernetes.yml', ROOT), 'utf8')) as {
      rule_files: string[];
      global: Record<string, string>;
      scrape_configs: Record<string, unknown>[];
    };
    const { kubernetes_sd_configs: discovered, ...relabelled } = shipped.scrape_configs[0]!;
    expect(discovered).toBeDefined();
    const job = { ...relabelled, file_sd_configs: [{ files: [join(dir, 'pods.json')] }] };
    const config = { ...shipped, global: { scrape_interval: '1s', evaluation_interval: '1s' }, rule_files: [rulesFile(dir)], scrape_configs: [job] };
    const { base, tool, stop } = await prometheus(dir, JSON.stringify(config));
    await seesBothEngines(base, () => tool.output());
    // Each engine is named by its pod.
    expect((await instant(base, 'count by (instance) (gpualert_hosts)')).map((s) => s.metric.instance).sort()).toEqual(
      pods.map((p) => p.labels.__meta_kubernetes_pod_name),
    );
    await stop();
  }, 120_000);

  // Binding port 53 for the DNS server needs root; the build machines run the tests as root.
  it.skipIf(process.getuid?.() !== 0)(
    "deploy/compose/prometheus.yml, the engines found by DNS as Docker's DNS names `--scale engine=2`; a static target on that name would reach one",
    async () => {
      const dns = await DnsServer.start(DNS_ADDRESS, new Map([['engine', ENGINE_ADDRESSES]]));
      cleanups.push(() => dns.stop());
      const dir = tempDir('several-engines-compose');
      const resolvConf = join(dir, 'resolv.conf');
      writeFileSync(resolvConf, `nameserver ${DNS_ADDRESS}\n`);
      // Prometheus in a mount namespace of its own, where /etc/resolv.conf names the DNS server above
      // (as /etc/resolv.conf in a compose container names Docker's).
      const inNamespace = (argv: string[]) => ['unshare', '--mount', '--', 'sh', '-c', 'mount --bind "$0" /etc/resolv.conf && exec "$@"', resolvConf, ...argv];
      const shipped = readFileSync(new URL('deploy/compose/prometheus.yml', ROOT), 'utf8');
      const common = [
        ['- gpualert.rules.yml', `- ${rulesFile(dir)}`],
        ['scrape_interval: 15s', 'scrape_interval: 1s'],
        ['evaluation_interval: 30s', 'evaluation_interval: 1s'],
      ] as const;
      const { base, tool, stop } = await prometheus(dir, replaced(shipped, [['port: 9470', `port: ${port}`], ...common]), inNamespace);
      await seesBothEngines(base, () => tool.output());
      expect(dns.queries).toBeGreaterThan(0);
      await stop();

      // What the DNS discovery is for: the same name as a static target is one engine's hosts only.
      const staticDir = tempDir('several-engines-compose-static');
      const asStatic = replaced(shipped, [
        [/dns_sd_configs: .*$/m.exec(shipped)![0], `static_configs: [{ targets: ["engine:${port}"] }]`],
        ['- gpualert.rules.yml', `- ${rulesFile(staticDir)}`],
        ['scrape_interval: 15s', 'scrape_interval: 1s'],
      ]);
      const single = await prometheus(staticDir, asStatic, inNamespace);
      await waitFor(async () => (await instant(single.base, 'gpualert_hosts').catch(() => [])).length > 0, 'the static target scraped', 60_000);
      const hosts = (await instant(single.base, 'count by (host) (gpualert_gpu_state)')).map((s) => s.metric.host).sort();
      expect(hosts.length).toBeGreaterThan(0);
      expect(hosts.length).toBeLessThan(HOSTS);
      expect([owned.get(ENGINE_ADDRESSES[0])!, owned.get(ENGINE_ADDRESSES[1])!]).toContainEqual(hosts);
      await single.stop();
    },
    180_000,
  );
});
