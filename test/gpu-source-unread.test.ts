import { nvidiaSmiSource } from '@gpualert/collectors';
import { describe, expect, it } from 'vitest';
import { FakeNvidiaSmi } from './infra/fake-nvidia-smi.ts';

describe('the nvidia-smi source, a GPU that needs a reset', () => {
  it('reads its values as null and has each unreadable value said once, however many scrapes print it', async () => {
    const smi = new FakeNvidiaSmi();
    smi.file(
      'rows.csv',
      '0, GPU-aaa, NVIDIA H100 80GB HBM3, 00000000:3B:00.0, 97, 61, 650.50, 0x0000000000000004\n1, GPU-bbb, NVIDIA H100 80GB HBM3, 00000000:5D:00.0, [GPU requires reset], [GPU requires reset], [GPU requires reset], [GPU requires reset]\n',
    );
    const source = await nvidiaSmiSource({ binary: smi.path, timeoutMs: 5_000, attribution: false });
    const first = await source.scrape();
    expect(first.gpus.map((g) => [g.index, g.util_pct, g.temp_c, g.power_w])).toEqual([
      [0, 97, 61, 650.5],
      [1, null, null, null],
    ]);
    expect(source.takeNotes?.()).toEqual([
      'utilization.gpu: [GPU requires reset]',
      'temperature.gpu: [GPU requires reset]',
      'power.draw: [GPU requires reset]',
    ]);
    await source.scrape();
    expect(source.takeNotes?.()).toEqual([]);
  });
});
