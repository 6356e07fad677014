import { emptyEngineState, loadRuleSet, newHostState } from '@gpualert/engine';
import type { GpuSampleData } from '@gpualert/schema';
import { afterEach, describe, expect, it } from 'vitest';
import { EngineMetrics, startEngineMetricsServer } from './engine-metrics.ts';

const rules = loadRuleSet();
if (!rules.ok) throw new Error('bundled rules');
const sample = (temp: number): GpuSampleData => ({
  gpus: [{ index: 0, uuid: null, pci_bus: null, name: null, util_pct: 95, mem_util_pct: null, mem_used_mib: null, mem_total_mib: null, temp_c: temp, mem_temp_c: null, power_w: 600, power_limit_w: null, sm_clock_mhz: null, mem_clock_mhz: null, fan_pct: null, pcie_gen: null, pcie_gen_max: null, pcie_width: null, pcie_width_max: null, ecc_sbe_volatile: null, ecc_dbe_volatile: null, ecc_sbe_aggregate: null, ecc_dbe_aggregate: null, remap_pending: null, remap_failure: null, throttle: [], xid_last: null, nvlink_errors: null, processes: 1 }],
} as unknown as GpuSampleData);

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('the engine\'s /metrics', () => {
  it('exports only the hosts this engine owns: a host handed to another engine leaves with its samples', async () => {
    const metrics = new EngineMetrics(rules.ok ? rules.value : (undefined as never));
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
    expect(await scrape.text()).toMatch(/^gpualert_hosts 0$/m);
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${base}/state`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(404);
  });
});
