import { readFileSync } from 'node:fs';
import { GpuSampleData } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { parseDcgmText } from './dcgm-text.ts';

const text = readFileSync(new URL('../../../test/fixtures/dcgm/exporter.prom', import.meta.url), 'utf8');

describe('DCGM exporter text', () => {
  const parsed = parseDcgmText(text);

  it('groups series by the old Hostname label and keeps hosts apart', () => {
    expect([...parsed.hosts.keys()].sort()).toEqual(['424773df46e0', '551bdf382151', 'gpu-node-1', 'unknown']);
    expect(parsed.problems).toEqual([]);
  });

  it("maps the H100 node's four GPUs with canonical buses", () => {
    const gpus = parsed.hosts.get('gpu-node-1')!;
    expect(gpus.map((g) => [g.index, g.pci_bus, g.temp_c, g.power_w, g.util_pct])).toEqual([
      [0, '0000:53:00', 30, 113.611, 0],
      [1, '0000:64:00', 29, 68.347, 0],
      [2, '0000:75:00', 26, 65.709, 0],
      [3, '0000:86:00', 29, 67.316, 0],
    ]);
    expect(gpus[0]!.name).toBe('NVIDIA H100 80GB HBM3');
  });

  it('treats a blank sentinel as null and the Xid gauge as the last code', () => {
    expect(parsed.hosts.get('unknown')![0]!).toMatchObject({ mem_temp_c: null, sm_clock_mhz: 139, mem_clock_mhz: 405 });
    const t4 = parsed.hosts.get('424773df46e0')![0]!;
    expect(t4).toMatchObject({ xid_last: 0, temp_c: 25, name: 'Tesla T4', mem_total_mib: null });
    expect(parsed.hosts.get('551bdf382151')![0]!).toMatchObject({ power_limit_w: 70, throttle: ['gpu_idle'] });
  });

  it('accepts the new lower-case hostname label, FB_USED + FB_FREE as total, and a host override', () => {
    const next = parseDcgmText(
      [
        'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-x",hostname="node-9"} 1000',
        'DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-x",hostname="node-9"} 79000',
        'DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-x",hostname="node-9"} 79',
        'DCGM_FI_DEV_ROW_REMAP_PENDING{gpu="1",UUID="GPU-x",hostname="node-9"} 1',
        'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="1",UUID="GPU-x",hostname="node-9"} 72',
        'not a metric line {',
      ].join('\n'),
    );
    expect(next.hosts.get('node-9')![0]).toMatchObject({
      index: 1,
      mem_used_mib: 1000,
      mem_total_mib: 80000,
      xid_last: 79,
      remap_pending: true,
      throttle: ['hw_slowdown', 'hw_thermal_slowdown'],
    });
    expect(next.problems).toEqual([{ line: 6, text: 'not a metric line {' }]);
    expect([...parseDcgmText(text, 'my-host').hosts.keys()]).toEqual(['my-host']);
  });
});

describe("label names are the exporter's data", () => {
  it('a series labelled __proto__ or constructor is parsed like any other and touches no prototype', () => {
    const text = 'DCGM_FI_DEV_GPU_TEMP{gpu="1",__proto__="x",constructor="y",Hostname="h1"} 71\nDCGM_FI_DEV_GPU_TEMP{gpu="300",Hostname="h1"} 50\n';
    const parsed = parseDcgmText(text);
    expect(parsed.hosts.get('h1')?.map((g) => [g.index, g.temp_c])).toEqual([[1, 71]]);
  });
});

describe('values a GPU cannot report', () => {
  it('are null, not judged: a 1e308 °C, a fractional Xid, negative memory; a GPU label that is no index is a problem', () => {
    const text = [
      'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="h1"} 1e308',
      'DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="h1"} 79.5',
      'DCGM_FI_DEV_FB_USED{gpu="0",Hostname="h1"} -5',
      'DCGM_FI_DEV_POWER_USAGE{gpu="0",Hostname="h1"} 412.5',
      'DCGM_FI_DEV_GPU_TEMP{gpu="-1",Hostname="h1"} 50',
      'DCGM_FI_DEV_GPU_TEMP{gpu="0x1",Hostname="h1"} 50',
    ].join('\n');
    const parsed = parseDcgmText(text);
    expect(parsed.hosts.get('h1')).toMatchObject([{ index: 0, temp_c: null, xid_last: null, mem_used_mib: null, power_w: 412.5 }]);
    expect(GpuSampleData.safeParse({ gpus: parsed.hosts.get('h1') }).success).toBe(true);
    expect(parsed.problems.map((p) => p.line)).toEqual([5, 6]);
  });
});
