import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { MemoryBus, type Subscription } from '@gpualert/bus';
import { PrometheusQueryError, queryPrometheusGpus, startPrometheusCollector } from '@gpualert/collectors';
import { parseDcgmText } from '@gpualert/gpu-metrics';
import { createLogger } from '@gpualert/log';
import { GpuSampleData, parseEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { afterEach, describe, expect, it } from 'vitest';
import { debianTool } from '../alertmanager/debian-tool.ts';
import { freePort, startToolOnFreePort, tempDir } from '../alertmanager/harness.ts';
import { waitFor } from '../infra/wait-for.ts';

/** dcgm-exporter's own output (test/fixtures/README.md names its sources), served as an exporter would. */
const EXPORTER_TEXT = readFileSync(new URL('../fixtures/dcgm/exporter.prom', import.meta.url), 'utf8');
const log = createLogger({ name: 'test', level: 'silent' });

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function exporter(text: () => string): Promise<number> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as { port: number }).port;
}

/** Debian's Prometheus 2.42 scraping the given exporter every second; resolves once it has the series. */
async function prometheus(exporterPort: number): Promise<string> {
  const dir = tempDir('prometheus-collect');
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `
global: { scrape_interval: 1s }
scrape_configs:
- job_name: dcgm
  static_configs: [{ targets: ['127.0.0.1:${exporterPort}'] }]
`,
  );
  const { tool, port } = await startToolOnFreePort(
    debianTool('prometheus', 'prometheus'),
    (port) => [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    cleanups,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      try {
        return (await queryPrometheusGpus({ url, timeoutMs: 1_000 })).hosts.size > 0;
      } catch {
        return false;
      }
    },
    `Prometheus to have scraped the exporter (it said:\n${tool.output().slice(-1500)})`,
    60_000,
  );
  return url;
}

describe('gpualert collect prometheus, against a real Prometheus scraping dcgm-exporter output', () => {
  it('reads the same GPUs through the Prometheus API as from the exporter text itself, host by host', async () => {
    const url = await prometheus(await exporter(() => EXPORTER_TEXT));
    const fromText = parseDcgmText(EXPORTER_TEXT).hosts;
    const fromPrometheus = (await queryPrometheusGpus({ url, timeoutMs: 5_000 })).hosts;
    // The exporter's Hostname label names the machine; series without one take Prometheus' instance.
    const expectedHosts = [...fromText.keys()].map((h) => (h === 'unknown' ? '127.0.0.1' : h)).sort();
    expect(expectedHosts.length).toBeGreaterThanOrEqual(3);
    expect([...fromPrometheus.keys()].sort()).toEqual(expectedHosts);
    for (const host of fromText.keys()) expect(fromPrometheus.get(host === 'unknown' ? '127.0.0.1' : host), host).toEqual(fromText.get(host));
    const t4 = fromPrometheus.get('424773df46e0')![0]!;
    expect(t4).toMatchObject({ index: 0, name: 'Tesla T4', temp_c: 25, power_w: 8.969, uuid: 'GPU-3696967c-d052-dbcb-8d2c-afcb48b87f38' });
    // DCGM's blank sentinel (9223372036854775794) is no value, not a temperature.
    expect(fromPrometheus.get('127.0.0.1')![0]!.mem_temp_c).toBeNull();
  }, 90_000);

  it('publishes one valid gpu.sample per host each interval, and follows the exporter when a GPU heats up', async () => {
    let temperature = 25;
    const text = () => EXPORTER_TEXT.replace(/(DCGM_FI_DEV_GPU_TEMP\{[^}]*Hostname="424773df46e0"[^}]*\}) 25/, `$1 ${temperature}`);
    const url = await prometheus(await exporter(text));
    const bus = new MemoryBus();
    const samples: EnvelopeOf<'gpu.sample'>[] = [];
    const sub: Subscription = await bus.consume({
      group: 'reader',
      topics: [TOPICS.gpuSamples],
      handler: async (batch) => {
        for (const { envelope } of batch.items) if (envelope.type === 'gpu.sample') samples.push(envelope);
      },
    });
    cleanups.push(() => sub.stop());
    const collector = startPrometheusCollector({ bus, query: { url, timeoutMs: 5_000 }, intervalMs: 500, labels: { cluster: 'dcgm-fleet' }, log });
    cleanups.push(() => collector.stop());
    await waitFor(() => samples.some((s) => s.host === '424773df46e0'), 'a sample of host 424773df46e0', 30_000);
    const first = samples.find((s) => s.host === '424773df46e0')!;
    expect(parseEnvelope(JSON.stringify(first)).ok).toBe(true);
    expect(first).toMatchObject({ source: 'collector-prometheus/0.1.0', labels: { cluster: 'dcgm-fleet' }, data: { gpus: [{ index: 0, temp_c: 25 }] } });
    temperature = 93;
    await waitFor(() => samples.some((s) => s.host === '424773df46e0' && s.data.gpus[0]?.temp_c === 93), 'the hotter GPU in a later sample', 30_000);
  }, 90_000);

  it('says plainly when Prometheus is not there, and publishes nothing for it', async () => {
    const port = await freePort();
    await expect(queryPrometheusGpus({ url: `http://127.0.0.1:${port}`, timeoutMs: 2_000 })).rejects.toThrow(PrometheusQueryError);
    const notPrometheus = await exporter(() => 'not json');
    await expect(queryPrometheusGpus({ url: `http://127.0.0.1:${notPrometheus}`, timeoutMs: 2_000 })).rejects.toThrow(/not JSON/);
  });

  it('takes a hostile answer apart safely: the samples are dated when asked, impossible values are null, bad GPU labels are counted', async () => {
    const answer = {
      status: 'success',
      data: {
        resultType: 'vector',
        result: [
          { metric: { __name__: 'DCGM_FI_DEV_GPU_TEMP', gpu: '0', Hostname: 'h1' }, value: [4102444800, '1e308'] },
          { metric: { __name__: 'DCGM_FI_DEV_XID_ERRORS', gpu: '0', Hostname: 'h1', __proto__: 'x' }, value: [4102444800, '79.5'] },
          { metric: { __name__: 'DCGM_FI_DEV_POWER_USAGE', gpu: '0', Hostname: 'h1' }, value: [4102444800, '350'] },
          // An empty value is unknown (null), not 0 %: Number('') would read it as an idle GPU.
          { metric: { __name__: 'DCGM_FI_DEV_GPU_UTIL', gpu: '0', Hostname: 'h1' }, value: [4102444800, ''] },
          { metric: { __name__: 'DCGM_FI_DEV_GPU_TEMP', gpu: '-1', Hostname: 'h1' }, value: [4102444800, '50'] },
          { metric: { __name__: 'DCGM_FI_DEV_GPU_TEMP', gpu: '1e2', Hostname: 'h1' }, value: [4102444800, '50'] },
        ],
      },
    };
    // JSON.stringify drops a literal __proto__ key's own-ness: write it as Prometheus would send it.
    const body = JSON.stringify(answer).replace('"Hostname":"h1"},"value":[4102444800,"79.5"]', '"Hostname":"h1","__proto__":"x"},"value":[4102444800,"79.5"]');
    const port = await exporter(() => body);
    const at = new Date('2026-12-01T00:00:00.000Z');
    const got = await queryPrometheusGpus({ url: `http://127.0.0.1:${port}`, timeoutMs: 2_000, at });
    expect(got.evaluatedAt.toISOString()).toBe(at.toISOString());
    expect(got.skipped).toBe(2);
    expect(got.hosts.get('h1')).toMatchObject([{ index: 0, temp_c: null, xid_last: null, power_w: 350, util_pct: null }]);
    expect(GpuSampleData.safeParse({ gpus: got.hosts.get('h1') }).success).toBe(true);
  });

  it('never follows a redirect: the address it points at gets no request, and the error names the status and where', async () => {
    let hits = 0;
    const elsewhere = createServer((_req, res) => {
      hits += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"success","data":{"resultType":"vector","result":[]}}');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const elsewherePort = (elsewhere.address() as { port: number }).port;
    const redirecting = createServer((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${elsewherePort}/api/v1/query` });
      res.end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const server of [elsewhere, redirecting]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });
    // Asked directly, the other address answers: the check sees a request when there is one.
    await queryPrometheusGpus({ url: `http://127.0.0.1:${elsewherePort}`, timeoutMs: 2_000 });
    expect(hits).toBe(1);
    const port = (redirecting.address() as { port: number }).port;
    await expect(queryPrometheusGpus({ url: `http://127.0.0.1:${port}`, authorization: 'Bearer t0ken', timeoutMs: 2_000 })).rejects.toThrow(
      `Prometheus at http://127.0.0.1:${port} answered 302, a redirect to http://127.0.0.1:${elsewherePort}: gpualert never follows one`,
    );
    expect(hits).toBe(1);
    // Not worth trying again: a one-shot query ends with exit 1, not 75.
    const { runCli, cleanEnv } = await import('../infra/run-cli.ts');
    const once = await runCli(['collect', 'prometheus', '--url', `http://127.0.0.1:${port}`, '--once', '--timeout', '2s'], { env: cleanEnv() });
    expect([once.code, once.stderr]).toEqual([1, expect.stringMatching(/^error\[GA-PROMETHEUS-QUERY-FAILED\]: .*answered 302, a redirect to /)]);
    expect(hits).toBe(1);
  });

  it('a one-shot query against a Prometheus that is not there ends with exit 75 and one line', async () => {
    const { runCli, cleanEnv } = await import('../infra/run-cli.ts');
    const port = await freePort();
    const away = await runCli(['collect', 'prometheus', '--url', `http://127.0.0.1:${port}`, '--once', '--timeout', '2s'], { env: cleanEnv() });
    expect(away.code).toBe(75);
    expect(away.stderr.trim().split('\n')).toHaveLength(1);
    expect(away.stderr).toMatch(new RegExp(`^error\\[GA-PROMETHEUS-QUERY-FAILED\\]: gpualert collect prometheus: Prometheus at http://127.0.0.1:${port}: `));
  });
});
