import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countComputeApps, lostGpuMessage, parseNvidiaSmiCsv } from './nvidia-smi-csv.ts';
import { chooseQueryFields, supportedQueryFields } from './nvidia-smi-fields.ts';

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');

describe('nvidia-smi --query-gpu CSV', () => {
  const withUnits = parseNvidiaSmiCsv(fixture('query-subset.csv'));

  it('reads every row of the subset capture, one scrape per repeated index', () => {
    expect(withUnits.problems).toEqual([]);
    expect(withUnits.samples).toHaveLength(12);
    expect(withUnits.samples.map((s) => s[0]!.name)).toEqual([
      'NVIDIA H100 80GB HBM3',
      'NVIDIA H100 80GB HBM3',
      'NVIDIA H200',
      'NVIDIA H200',
      'NVIDIA H100 80GB HBM3',
      'NVIDIA H100 80GB HBM3',
      'NVIDIA L40S',
      'NVIDIA L40S',
      'NVIDIA GeForce RTX 2080 SUPER',
      'NVIDIA GeForce RTX 2080 SUPER',
      'NVIDIA GeForce RTX 4080 SUPER',
      'NVIDIA GeForce RTX 4080 SUPER',
    ]);
  });

  it('maps an idle H100 row, units stripped, hex mask decoded, bus canonical', () => {
    expect(withUnits.samples[0]![0]).toMatchObject({
      index: 0,
      uuid: 'GPU-e16e002b-a796-db2f-394b-3208bf01e596',
      pci_bus: '0000:00:09',
      temp_c: 41,
      mem_temp_c: 48,
      power_w: 69.85,
      power_limit_w: 700,
      util_pct: 0,
      mem_util_pct: 0,
      mem_used_mib: 0,
      mem_total_mib: 81559,
      sm_clock_mhz: 345,
      ecc_dbe_volatile: 0,
      pcie_gen: 5,
      pcie_gen_max: 5,
      pcie_width: 16,
      pcie_width_max: 16,
      fan_pct: null,
      remap_pending: false,
      remap_failure: false,
      throttle: ['gpu_idle'],
    });
    expect(withUnits.samples[1]![0]).toMatchObject({ power_w: 631.95, util_pct: 100, throttle: [] });
  });

  it('turns [N/A] under MIG, N/A memory temperature and [N/A] ECC into null, never 0', () => {
    const mig = withUnits.samples[4]![0]!;
    expect(mig.util_pct).toBeNull();
    expect(mig.mem_util_pct).toBeNull();
    expect(mig.remap_pending).toBeNull();
    const l40s = withUnits.samples[6]![0]!;
    expect(l40s).toMatchObject({ mem_temp_c: null, power_limit_w: 350, pcie_gen: 4 });
    const geforce = withUnits.samples[8]![0]!;
    expect(geforce).toMatchObject({ ecc_dbe_volatile: null, fan_pct: 38, pcie_gen: 1, pcie_gen_max: 3, throttle: ['sw_power_cap'] });
  });

  it('reads the same values without header and units when given the fields', () => {
    const header = fixture('query-subset.csv')
      .split('\n')[0]!
      .split(', ')
      .map((c) => c.replace(/ \[[^\]]+\]$/, ''));
    const bare = parseNvidiaSmiCsv(fixture('query-subset.noheader-nounits.csv'), header);
    expect(bare.problems).toEqual([]);
    expect(bare.samples).toEqual(withUnits.samples.slice(0, bare.samples.length));
  });

  it('reads the 212-field capture of driver 590 (clocks_event_reasons, [Requested functionality has been deprecated])', () => {
    const full = parseNvidiaSmiCsv(fixture('query-gpu-full-h100.csv'));
    expect(full.problems).toEqual([]);
    expect(full.samples).toHaveLength(2);
    expect(full.samples[0]![0]).toMatchObject({
      mem_clock_mhz: 2619,
      ecc_sbe_aggregate: 0,
      ecc_dbe_aggregate: 0,
      throttle: ['gpu_idle'],
      temp_c: 41,
    });
  });

  it("reads an old driver's [Not Supported] cells as null", () => {
    const rows = fixture('legacy-not-supported.csv')
      .split('\n')
      .filter((l) => /^\d+, /.test(l))
      .join('\n');
    const legacy = parseNvidiaSmiCsv(rows, ['index', 'uuid', 'name', 'temperature.gpu', 'utilization.gpu', 'memory.used', 'memory.total']);
    expect(legacy.samples[0]!.map((g) => [g.index, g.temp_c, g.util_pct])).toEqual([
      [0, 80, 76],
      [1, 36, 0],
      [2, 71, null],
    ]);
  });

  it('reports what is not a row instead of throwing', () => {
    const lost = 'index, uuid\nUnable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n';
    const parsed = parseNvidiaSmiCsv(lost);
    expect(parsed.samples).toEqual([]);
    expect(parsed.problems).toEqual([{ line: 2, text: 'Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error', count: 1 }]);
    expect(lostGpuMessage(parsed.problems[0]!.text)).toEqual({ pciBus: '0000:3b:00' });
    expect(lostGpuMessage('GPU has fallen off the bus')).toEqual({ pciBus: null });
    expect(lostGpuMessage('temperature.gpu, 41')).toBeUndefined();
  });

  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 500 }), (text) => void parseNvidiaSmiCsv(text)),
      { numRuns: 300 },
    );
  });
});

describe('query fields', () => {
  it('leaves out what the driver lacks and takes the old throttle name on old drivers', () => {
    const old = supportedQueryFields('"index"\n"uuid"\n"temperature.gpu"\n"clocks_throttle_reasons.active"\n"power.draw"\n');
    expect(chooseQueryFields(old)).toEqual(['index', 'uuid', 'temperature.gpu', 'power.draw', 'clocks_throttle_reasons.active']);
    const current = new Set(['index', 'clocks_event_reasons.active', 'clocks_throttle_reasons.active', 'power.draw.instant', 'power.draw']);
    expect(chooseQueryFields(current)).toEqual(['index', 'power.draw.instant', 'clocks_event_reasons.active']);
  });
});

describe('nvidia-smi --query-compute-apps', () => {
  it('counts processes per GPU', () => {
    expect(countComputeApps(fixture('query-compute-apps.csv'))).toEqual(new Map([['GPU-e16e002b-a796-db2f-394b-3208bf01e596', 3]]));
  });
});

describe('values a GPU cannot report, from nvidia-smi', () => {
  it('a temperature of 1e308 and utilisation of 250 % are null; an index past 255 or a header named __proto__ is no metric', () => {
    const parsed = parseNvidiaSmiCsv('index, temperature.gpu, utilization.gpu, __proto__\n0, 1e308, 250, 7\n300, 40, 10, 7\n', undefined);
    expect(parsed.samples).toEqual([[expect.objectContaining({ index: 0, temp_c: null, util_pct: null })]]);
    expect(parsed.problems.map((p) => p.line)).toEqual([3]);
  });
});
