import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { debianTool } from '../alertmanager/debian-tool.ts';
import { startToolOnFreePort, tempDir } from '../alertmanager/harness.ts';
import { waitFor } from '../infra/wait-for.ts';

/**
 * deploy/prometheus/kubernetes.yml: Prometheus in the cluster finds every gpualert pod that asks to
 * be scraped, each engine replica as a target of its own. Discovery itself needs an API server,
 * which these machines do not have (and Debian's Prometheus is built without it): checked here are
 * that what it keeps (the annotation, a port named `http`, the two namespaces) is what the
 * manifests of deploy/kubernetes carry, and its relabelling, run by a real Prometheus.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const CONFIG = join(ROOT, 'deploy/prometheus/kubernetes.yml');

// Manifests are data read from YAML.
type Obj = Record<string, any>;

const workloads = (parseYaml(readFileSync(join(ROOT, 'deploy/kubernetes/kustomization.yaml'), 'utf8')) as { resources: string[] }).resources
  .flatMap((file) => parseAllDocuments(readFileSync(join(ROOT, 'deploy/kubernetes', file), 'utf8')).map((d) => d.toJS() as Obj))
  .filter((o) => ['Deployment', 'StatefulSet', 'DaemonSet'].includes(o.kind as string));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A pod's /metrics, as an engine serves its own hosts. */
async function metricsServer(text: string): Promise<number> {
  const server = createServer((req, res) => {
    res.writeHead(req.url === '/metrics' ? 200 : 404, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as { port: number }).port;
}

describe('Prometheus in Kubernetes: pod discovery for every engine', () => {
  it('keeps every pod that serves /metrics in deploy/kubernetes: the engines, the notifier, the intake and the agents', () => {
    const config = parseYaml(readFileSync(CONFIG, 'utf8')) as {
      scrape_configs: { kubernetes_sd_configs: { namespaces: { names: string[] } }[]; relabel_configs: Obj[] }[];
    };
    const job = config.scrape_configs[0]!;
    const namespaces = job.kubernetes_sd_configs[0]!.namespaces.names;
    const portName = job.relabel_configs.find((r) => (r.source_labels as string[]).includes('__meta_kubernetes_pod_container_port_name'))!.regex as string;
    const scraped = workloads.filter((w) => w.spec.template.metadata.annotations?.['prometheus.io/scrape'] === 'true');
    expect(scraped.map((w) => w.metadata.name as string).sort()).toEqual(['gpualert-agent', 'gpualert-engine', 'gpualert-intake', 'gpualert-notifier']);
    for (const w of scraped) {
      expect(namespaces, w.metadata.name as string).toContain(w.metadata.namespace);
      const port = ((w.spec.template.spec.containers as Obj[])[0]!.ports as Obj[]).find((p) => p.name === portName);
      expect(String(port?.containerPort), w.metadata.name as string).toBe(w.spec.template.metadata.annotations['prometheus.io/port']);
    }
    // More than one engine: each replica is a pod, so a target.
    expect(workloads.find((w) => w.metadata.name === 'gpualert-engine')!.spec.replicas).toBeGreaterThan(1);
  });

  /**
   * Debian's Prometheus is built without Kubernetes discovery (`kubernetes_sd_configs` is unknown to
   * it, and there is no API server here), so the shipped relabelling runs in a real Prometheus on
   * targets given as a file carrying the labels Kubernetes discovery gives a pod: two engine
   * replicas, an intake, and a pod that does not ask to be scraped. Each engine must be a target
   * of its own, under the job the rules and dashboards expect.
   */
  it('the shipped relabelling, run by a real Prometheus on pods as Kubernetes discovery describes them: two engines, two targets; the unannotated pod left out', async () => {
    const dir = tempDir('prometheus-k8s');
    const pod = (name: string, app: string, port: number, scrape: boolean) => ({
      targets: [`127.0.0.1:${port}`],
      labels: {
        __meta_kubernetes_namespace: 'gpualert',
        __meta_kubernetes_pod_name: name,
        __meta_kubernetes_pod_node_name: 'node-a',
        __meta_kubernetes_pod_label_app_kubernetes_io_name: app,
        __meta_kubernetes_pod_container_port_name: 'http',
        ...(scrape
          ? {
              __meta_kubernetes_pod_annotation_prometheus_io_scrape: 'true',
              __meta_kubernetes_pod_annotation_prometheus_io_port: String(port),
              __meta_kubernetes_pod_annotation_prometheus_io_path: '/metrics',
            }
          : {}),
      },
    });
    const engineA = await metricsServer('gpualert_hosts 2\n');
    const engineB = await metricsServer('gpualert_hosts 3\n');
    const intake = await metricsServer('gpualert_intake_requests_total 0\n');
    const other = await metricsServer('other 1\n');
    writeFileSync(
      join(dir, 'pods.json'),
      JSON.stringify([
        pod('gpualert-engine-a', 'gpualert-engine', engineA, true),
        pod('gpualert-engine-b', 'gpualert-engine', engineB, true),
        pod('gpualert-intake-x', 'gpualert-intake', intake, true),
        pod('someone-else', 'other', other, false),
      ]),
    );
    const shipped = parseYaml(readFileSync(CONFIG, 'utf8')) as { scrape_configs: Obj[] };
    const job: Obj = { ...shipped.scrape_configs[0]!, scrape_interval: '1s', file_sd_configs: [{ files: [join(dir, 'pods.json')] }] };
    delete job.kubernetes_sd_configs;
    writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify({ global: { scrape_interval: '1s' }, scrape_configs: [job] }));
    const { tool, port } = await startToolOnFreePort(
      debianTool('prometheus', 'prometheus'),
      (p) => [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${p}`],
      cleanups,
    );
    const query = async (expr: string) =>
      (
        (await (await fetch(`http://127.0.0.1:${port}/api/v1/query?${new URLSearchParams({ query: expr }).toString()}`)).json()) as {
          data: { result: { metric: Record<string, string>; value: [number, string] }[] };
        }
      ).data.result;
    await waitFor(
      async () => (await query('gpualert_hosts').catch(() => [])).length === 2,
      `both engines scraped (prometheus said:\n${tool.output().slice(-1500)})`,
      60_000,
    );
    const hosts = await query('gpualert_hosts');
    expect(hosts.map((s) => [s.metric.job, s.metric.instance, s.metric.namespace, s.value[1]]).sort()).toEqual([
      ['gpualert-engine', 'gpualert-engine-a', 'gpualert', '2'],
      ['gpualert-engine', 'gpualert-engine-b', 'gpualert', '3'],
    ]);
    // The rules add the engines up: the fleet is the sum of what each owns.
    expect(Number((await query('sum(gpualert_hosts)'))[0]!.value[1])).toBe(5);
    await waitFor(async () => (await query('up')).length === 3, 'three targets', 30_000);
    expect((await query('up')).map((s) => s.metric.job).sort()).toEqual(['gpualert-engine', 'gpualert-engine', 'gpualert-intake']);
  }, 120_000);
});
