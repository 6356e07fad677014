import { emptyEngineState, loadRuleSet, newHostState, renderFleetMetrics } from '@gpualert/engine';
import type { GpuSampleData } from '@gpualert/schema';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { slowClient } from '../../../test/infra/slow-client.ts';
import { waitFor } from '@gpualert/test-support';
import { EngineMetrics, startEngineMetricsServer } from './engine-metrics.ts';

const rules = loadRuleSet();
if (!rules.ok) throw new Error('bundled rules');
const sample = (temp: number): GpuSampleData =>
  ({
    gpus: [
      {
        index: 0,
        uuid: null,
        pci_bus: null,
        name: null,
        util_pct: 95,
        mem_util_pct: null,
        mem_used_mib: null,
        mem_total_mib: null,
        temp_c: temp,
        mem_temp_c: null,
        power_w: 600,
        power_limit_w: null,
        sm_clock_mhz: null,
        mem_clock_mhz: null,
        fan_pct: null,
        pcie_gen: null,
        pcie_gen_max: null,
        pcie_width: null,
        pcie_width_max: null,
        ecc_sbe_volatile: null,
        ecc_dbe_volatile: null,
        ecc_sbe_aggregate: null,
        ecc_dbe_aggregate: null,
        remap_pending: null,
        remap_failure: null,
        throttle: [],
        xid_last: null,
        nvlink_errors: null,
        processes: 1,
      },
    ],
  }) as unknown as GpuSampleData;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe("the engine's /metrics", () => {
  it('exports only the hosts this engine owns: a host handed to another engine leaves with its samples', async () => {
    const metrics = new EngineMetrics(rules.ok ? rules.value : (undefined as never), undefined, { reuseMs: 0 });
    const state = emptyEngineState();
    metrics.attach(state);
    for (const name of ['gpu-a', 'gpu-b']) {
      const host = (state.hosts[name] = newHostState(name, {}, 'default'));
      host.gpus['0'] = { missing: 0, baselines: {}, counters: {}, recent: [], xids: {} };
      metrics.noteSample(name, sample(61));
    }
    const both = await metrics.render();
    expect(both).toContain('gpualert_gpu_sample_value{host="gpu-b",gpu="0",metric="temp_c"} 61');
    delete state.hosts['gpu-b']; // a rebalance: gpu-b now belongs to another engine
    const one = await metrics.render();
    expect(one).toContain('gpualert_gpu_sample_value{host="gpu-a",gpu="0",metric="temp_c"} 61');
    expect(one).not.toContain('host="gpu-b"');
    expect(one).toMatch(/^gpualert_hosts 1$/m);
    // The pipeline's health is there from the start, dead letters at zero per input topic.
    expect(one).toMatch(/^gpualert_engine_deadletters_total\{topic="gpualert\.gpu\.samples"\} 0$/m);
  });

  it('serves /metrics and /healthz over HTTP, and nothing else', async () => {
    const metrics = new EngineMetrics(rules.ok ? rules.value : (undefined as never));
    metrics.attach(emptyEngineState());
    const server = await startEngineMetricsServer(metrics, 0, '127.0.0.1');
    closers.push(() => server.close());
    const base = `http://127.0.0.1:${server.port}`;
    const scrape = await fetch(`${base}/metrics`);
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await scrape.text();
    expect(text).toMatch(/^gpualert_hosts 0$/m);
    // The process's own memory, by V8 heap space: where an engine's RSS goes.
    expect(Number(/^gpualert_engine_process_resident_memory_bytes (\d+)/m.exec(text)?.[1])).toBeGreaterThan(10 * 1024 * 1024);
    expect(text).toMatch(/^gpualert_engine_nodejs_heap_space_size_used_bytes\{space="old"\} [1-9]\d*$/m);
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${base}/state`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it('30 scrapes at once cost one render; a scrape after the reuse window sees the fleet as it is now', async () => {
    let clock = 0;
    const metrics = new EngineMetrics(rules.ok ? rules.value : (undefined as never), undefined, { reuseMs: 1_000, now: () => clock });
    const state = emptyEngineState();
    metrics.attach(state);
    for (let i = 0; i < 50; i += 1) {
      const host = (state.hosts[`gpu-${i}`] = newHostState(`gpu-${i}`, {}, 'default'));
      host.gpus['0'] = { missing: 0, baselines: {}, counters: {}, recent: [], xids: {} };
      metrics.noteSample(`gpu-${i}`, sample(61));
    }
    const server = await startEngineMetricsServer(metrics, 0, '127.0.0.1');
    closers.push(() => server.close());
    const scrape = async () => (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    const texts = await Promise.all(Array.from({ length: 30 }, scrape));
    const renders = (text: string) => Number(/^gpualert_engine_metrics_render_seconds_count (\d+)$/m.exec(text)?.[1]);
    expect(texts.map(renders)).toEqual(Array.from({ length: 30 }, () => 1));
    expect(new Set(texts).size).toBe(1);
    delete state.hosts['gpu-7'];
    clock += 999; // still inside the window: the same text
    expect(await scrape()).toBe(texts[0]);
    clock += 1; // past it: rendered anew, gpu-7 gone
    const fresh = await scrape();
    expect(renders(fresh)).toBe(2);
    expect(fresh).toMatch(/^gpualert_hosts 49$/m);
  });

  it('renders a big fleet in slices, handing the event loop back between them, to the text of one whole render', async () => {
    const ruleSet = rules.ok ? rules.value : (undefined as never);
    const state = emptyEngineState();
    const samples = new Map<string, GpuSampleData>();
    for (let i = 0; i < 3_000; i += 1) {
      const host = (state.hosts[`gpu-${i}`] = newHostState(`gpu-${i}`, {}, 'default'));
      host.gpus['0'] = { missing: 0, baselines: {}, counters: {}, recent: [], xids: {} };
      samples.set(`gpu-${i}`, sample(60 + (i % 7)));
    }
    const whole = renderFleetMetrics({ state, ruleSet, samples });
    /** The render's text, and how many turns of the event loop other work had while it ran. */
    const rendered = async (renderSliceMs: number) => {
      const metrics = new EngineMetrics(ruleSet, undefined, { reuseMs: 0, renderSliceMs });
      metrics.attach(state);
      for (const [host, data] of samples) metrics.noteSample(host, data);
      let turns = 0;
      let rendering = true;
      const other = () => {
        turns += 1;
        if (rendering) setImmediate(other);
      };
      setImmediate(other);
      const text = await metrics.render();
      rendering = false;
      return { text, turns };
    };
    const sliced = await rendered(1);
    const oneStep = await rendered(Infinity);
    expect(sliced.text.startsWith(whole)).toBe(true);
    expect(oneStep.text.startsWith(whole)).toBe(true);
    expect(sliced.text).toMatch(/^gpualert_hosts 3000$/m);
    expect(oneStep.turns).toBeLessThanOrEqual(2);
    expect(sliced.turns).toBeGreaterThan(5);
  });

  it('a render that a new assignment interrupts counts no host the engine gave up, and the next scrape renders afresh', async () => {
    const metrics = new EngineMetrics(rules.ok ? rules.value : (undefined as never), undefined, { reuseMs: 60_000, renderSliceMs: 1 });
    const state = emptyEngineState();
    metrics.attach(state);
    for (let i = 0; i < 3_000; i += 1) {
      const host = (state.hosts[`gpu-${i}`] = newHostState(`gpu-${i}`, {}, 'default'));
      host.gpus['0'] = { missing: 0, baselines: {}, counters: {}, recent: [], xids: {} };
      metrics.noteSample(`gpu-${i}`, sample(61));
    }
    const pending = metrics.render();
    await new Promise((resolve) => setImmediate(resolve)); // the render's first slice is done
    // What an assignment does (owned-hosts.ts, engine-service.ts): new hosts, the samples forgotten.
    state.hosts = emptyEngineState().hosts;
    for (let i = 0; i < 10; i += 1) state.hosts[`new-${i}`] = newHostState(`new-${i}`, {}, 'default');
    metrics.forgetSamples();
    const interrupted = await pending;
    const counted = Number(/^gpualert_hosts (\d+)$/m.exec(interrupted)?.[1]);
    expect(counted).toBeGreaterThan(0);
    expect(counted).toBeLessThan(3_000);
    expect(interrupted).not.toContain('host="gpu-2999"');
    expect(await metrics.render()).toMatch(/^gpualert_hosts 10$/m);
  });

  it('counts the alert series the per-host cap leaves out', async () => {
    const metrics = new EngineMetrics(rules.ok ? rules.value : (undefined as never), undefined, { reuseMs: 0 });
    const state = emptyEngineState();
    metrics.attach(state);
    const host = (state.hosts['bmc-storm'] = newHostState('bmc-storm', {}, 'default'));
    expect(await metrics.render()).toMatch(/^gpualert_metrics_series_dropped_total 0$/m);
    for (let i = 0; i < 300; i += 1) {
      host.trackers[`bmc-sel|S${i}`] = {
        rule: 'bmc-sel',
        category: 'other',
        firing: true,
        told: 'firing',
        startsAt: 0,
        severity: 'warning',
        baseSeverity: 'warning',
        lastBreach: 0,
        latched: false,
        transitions: [],
        flapping: false,
        evidence: [],
        summary: 's',
        action: '',
      };
    }
    expect(await metrics.render()).toMatch(/^gpualert_metrics_series_dropped_total 44$/m);
  });

  it('refuses a request with a body unread, and cuts off a client that never finishes its headers', async () => {
    const metrics = new EngineMetrics(rules.ok ? rules.value : (undefined as never));
    metrics.attach(emptyEngineState());
    const server = await startEngineMetricsServer(metrics, 0, '127.0.0.1', { headersTimeoutMs: 300, requestTimeoutMs: 600 });
    closers.push(() => server.close());
    // 1 GiB announced, a few bytes sent: answered at once, the connection closed.
    const refused = await new Promise<string>((resolve, reject) => {
      const client = connect(server.port, '127.0.0.1');
      let reply = '';
      client.on('data', (c: Buffer) => (reply += c.toString()));
      client.on('close', () => resolve(reply));
      client.on('error', reject);
      client.write(`GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: ${1 << 30}\r\n\r\nxxxx`);
    });
    expect(refused).toMatch(/^HTTP\/1\.1 413 /);
    expect(refused).not.toContain('gpualert_hosts');
    // A slowloris: half a request line, then nothing. The server closes it (checked every second);
    // the same client of a server with long limits is still connected then: the limits did it.
    const patient = await startEngineMetricsServer(metrics, 0, '127.0.0.1', { headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 });
    closers.push(() => patient.close());
    const halfRequest = 'GET /metrics HTTP/1.1\r\nHost: x\r\n';
    const cut = slowClient(server.port, halfRequest);
    const kept = slowClient(patient.port, halfRequest);
    try {
      await waitFor(() => cut.closed(), 'the server to cut off the slowloris', 30_000);
      expect(cut.reply()).toMatch(/^HTTP\/1\.1 408 /);
      expect(kept.closed()).toBe(false);
    } finally {
      cut.destroy();
      kept.destroy();
    }
  }, 60_000);
});
