import type { GpuMetrics, GpuSampleData } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import type { GpuSource } from '../gpu/gpu-source.ts';
import { DCGM_STALE_MS, GPU_STALL_MS, watchGpuSource } from './telemetry-watch.ts';

const GPU = {
  index: 0,
  uuid: 'GPU-aaa',
  pci_bus: '0000:3b:00',
  name: 'NVIDIA H100 80GB HBM3',
  util_pct: 97,
  temp_c: 61,
  power_w: 650.5,
} as unknown as GpuMetrics;

/** A source answering what the test hands it, when the test says. */
function scripted(name: string) {
  let answer: (data: GpuSampleData) => void = () => undefined;
  const source: GpuSource = { name, scrape: () => new Promise((resolve) => (answer = resolve)) };
  return { source, answer: (data: GpuSampleData) => answer(data) };
}

describe('the GPU source, watched', () => {
  it('DCGM serving the same values for two minutes is stale; a value changing makes it fresh again', async () => {
    let now = 1_000_000;
    const inner = scripted('dcgm');
    const { source, watch } = watchGpuSource(inner.source, { now: () => now });
    const scrape = async (gpu: GpuMetrics) => {
      const done = source.scrape();
      inner.answer({ gpus: [gpu] });
      await done;
    };
    await scrape(GPU);
    for (let t = 0; t < DCGM_STALE_MS; t += 15_000) {
      now += 15_000;
      expect(watch.check(now).state, `after ${t + 15_000} ms`).toBe(t + 15_000 >= DCGM_STALE_MS ? 'stale' : 'ok');
      await scrape(GPU);
    }
    expect(watch.check(now)).toMatchObject({ state: 'stale', quietMs: DCGM_STALE_MS });
    await scrape({ ...GPU, power_w: 651.2 } as GpuMetrics);
    expect(watch.check(now)).toEqual({ state: 'ok', quietMs: 0 });
  });

  it('nvidia-smi giving the same values is not stale (it asks the GPUs each run); killed at its timeout it is stalled at once', async () => {
    let now = 1_000_000;
    const inner = scripted('nvidia-smi');
    const { source, watch } = watchGpuSource(inner.source, { now: () => now });
    for (let i = 0; i < 20; i += 1) {
      const done = source.scrape();
      inner.answer({ gpus: [GPU] });
      await done;
      now += 15_000;
    }
    expect(watch.check(now).state).toBe('ok');
    const done = source.scrape();
    inner.answer({ gpus: [], error: { code: 'timeout', message: 'nvidia-smi timed out after 10000 ms' } });
    await done;
    expect(watch.check(now)).toMatchObject({ state: 'stalled', message: 'nvidia-smi timed out after 10000 ms' });
  });

  it('a scrape that never returns is stalled after its stated time, not before', () => {
    let now = 1_000_000;
    const inner = scripted('nvidia-smi');
    const { source, watch } = watchGpuSource(inner.source, { now: () => now });
    void source.scrape(); // never answered
    now += GPU_STALL_MS;
    expect(watch.check(now).state).toBe('ok');
    now += 1;
    expect(watch.check(now)).toMatchObject({ state: 'stalled', message: expect.stringContaining('a scrape has been running for 30 s') as unknown });
  });
});

describe('Fabric Manager by its unit state', () => {
  it('one `activating` (a restart) is not down; not active twice in a row is', async () => {
    const { chmodSync, mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { startFabricManagerWatch } = await import('./fabric-manager-watch.ts');
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-systemctl-'));
    const systemctl = join(dir, 'systemctl');
    // each call prints the next line of `states` (the last one once they run out)
    writeFileSync(join(dir, 'states'), 'active\nactivating\nactive\nfailed\nfailed\n');
    writeFileSync(
      systemctl,
      `#!/usr/bin/env bash\nn=$(cat "${dir}/n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "${dir}/n"\nline=$(sed -n "\${n}p" "${dir}/states"); [ -z "$line" ] && line=failed\necho "$line"\n[ "$line" = active ]\n`,
    );
    chmodSync(systemctl, 0o755);
    const watch = startFabricManagerWatch({ systemctl, unit: 'nvidia-fabricmanager.service', intervalMs: 150, timeoutMs: 5_000 });
    const { readFileSync } = await import('node:fs');
    const seen: string[] = [];
    let callsWhenDown = 0;
    try {
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !seen.includes('down')) {
        const state = watch.check(Date.now()).state;
        if (seen.at(-1) !== state) seen.push(state);
        if (state === 'down') callsWhenDown = Number(readFileSync(join(dir, 'n'), 'utf8'));
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await watch.stop();
    }
    // down only after the second `failed` in a row (the fifth call): the lone `activating` (the second) never showed as down
    expect(seen).toEqual(['ok', 'down']);
    expect(callsWhenDown).toBeGreaterThanOrEqual(5);
  });
});
