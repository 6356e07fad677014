import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../infra/wait-for.ts';
import { debianTool } from './debian-tool.ts';
import { startGpualertNotifier, startToolOnFreePort, tempDir, TOKEN, WebhookSink } from './harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A loopback exporter in dcgm-exporter's shape, its temperature set by the test. */
async function exporter() {
  let temperature = 91;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(`# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="3",Hostname="gpu-node-007"} ${temperature}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { port: (server.address() as { port: number }).port, set: (t: number) => (temperature = t) };
}

describe('Prometheus 2.42 sends its alerts to gpualert', () => {
  it('scrapes a loopback exporter, evaluates a rule file, pushes to /api/v2/alerts with a bearer token: the alert reaches the receiver, then resolves', async () => {
    const sink = new WebhookSink();
    await sink.start();
    cleanups.push(() => sink.stop());
    const { base } = await startGpualertNotifier(
      `
route:
  receiver: gpu-team
  group_by: [alertname, Hostname]
  group_wait: 1s
  group_interval: 1s
receivers:
- name: gpu-team
  webhook_configs: [{ url: '${sink.base}/gpu-team' }]
`,
      cleanups,
    );
    const gpu = await exporter();
    const dir = tempDir('prometheus');
    writeFileSync(
      join(dir, 'rules.yml'),
      `
groups:
- name: gpu
  rules:
  - alert: GpuTooHot
    expr: DCGM_FI_DEV_GPU_TEMP > 85
    labels: { severity: critical }
    annotations:
      summary: 'GPU {{ $labels.gpu }} on {{ $labels.Hostname }} at {{ $value }} °C'
      runbook_url: 'https://runbooks.example/gpu-too-hot'
      dashboard: 'https://grafana.example/d/dcgm?var-host={{ $labels.Hostname }}'
`,
    );
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [rules.yml]
scrape_configs:
- job_name: dcgm
  static_configs: [{ targets: ['127.0.0.1:${gpu.port}'] }]
alerting:
  alertmanagers:
  - api_version: v2
    authorization: { credentials: ${TOKEN} }
    static_configs: [{ targets: ['${new URL(base).host}'] }]
`,
    );
    const { tool: prometheus } = await startToolOnFreePort(
      debianTool('prometheus', 'prometheus'),
      (port) => [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--rules.alert.resend-delay=1s',
      ],
      cleanups,
    );
    const firing = () => sink.deliveries.find((d) => d.body.alerts.some((a) => a.labels.alertname === 'GpuTooHot' && a.status === 'firing'));
    await waitFor(() => firing() !== undefined, `the firing alert at the receiver (Prometheus said:\n${prometheus.output().slice(-2000)})`, 60_000);
    expect(firing()!.body).toMatchObject({
      receiver: 'gpu-team',
      status: 'firing',
      groupLabels: { alertname: 'GpuTooHot', Hostname: 'gpu-node-007' },
      alerts: [
        {
          labels: { alertname: 'GpuTooHot', gpu: '3', Hostname: 'gpu-node-007', job: 'dcgm', severity: 'critical' },
          annotations: {
            summary: 'GPU 3 on gpu-node-007 at 91 °C',
            runbook_url: 'https://runbooks.example/gpu-too-hot',
            dashboard: 'https://grafana.example/d/dcgm?var-host=gpu-node-007',
          },
        },
      ],
    });
    // Every annotation Prometheus sent, and nothing else, as Alertmanager's webhook would carry them; and amtool's alert list shows them too.
    expect(Object.keys(firing()!.body.alerts[0]!.annotations).sort()).toEqual(['dashboard', 'runbook_url', 'summary']);
    const listed = (await (await fetch(`${base}/api/v2/alerts?filter=alertname%3DGpuTooHot`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      annotations: Record<string, string>;
    }[];
    expect(listed[0]?.annotations.runbook_url).toBe('https://runbooks.example/gpu-too-hot');
    gpu.set(60);
    await waitFor(
      () =>
        sink.deliveries.some((d) => d.body.status === 'resolved' && d.body.alerts.some((a) => a.labels.alertname === 'GpuTooHot' && a.status === 'resolved')),
      'the resolved alert at the receiver',
      60_000,
    );
    expect(sink.deliveries.every((d) => d.path === '/gpu-team')).toBe(true);
  });
});
