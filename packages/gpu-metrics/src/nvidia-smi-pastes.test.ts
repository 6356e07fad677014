import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseNvidiaSmiCsv } from './nvidia-smi-csv.ts';
import { parseNvidiaSmiQuery } from './nvidia-smi-query-text.ts';
import { nvidiaSmiShape } from './nvidia-smi-shape.ts';
import { parseNvidiaSmiXml } from './nvidia-smi-xml.ts';

/** Real pastes, verbatim, each with its source in test/fixtures/nvidia-smi/pastes/README.md. */
const paste = (name: string) => readFileSync(new URL(`../../../test/fixtures/nvidia-smi/pastes/${name}`, import.meta.url), 'utf8');
const whats = (unread: readonly { what: string }[]) => unread.map((u) => u.what);

describe('--query-gpu pastes without an index column', () => {
  it('one row with pci.bus_id and units (GeForce RTX 2060): the GPU known by its bus, numbered 0, the unread fields named once', () => {
    const parsed = parseNvidiaSmiCsv(paste('no-index-single-row.system-monitoring-center-57.csv'));
    expect(parsed.problems).toEqual([]);
    expect(parsed.samples).toEqual([
      [
        expect.objectContaining({
          index: 0,
          pci_bus: '0000:09:00',
          name: 'GeForce RTX 2060',
          util_pct: 20,
          mem_util_pct: 8,
          mem_total_mib: 5934,
          mem_used_mib: 682,
          temp_c: 36,
          uuid: null,
        }),
      ],
    ]);
    expect(whats(parsed.unread)).toEqual([
      "no index column: GPUs known by pci.bus_id and numbered by their row in each scrape (nvidia-smi's order, unless -i chose GPUs)",
      'fields no metric takes: driver_version, memory.free, clocks.current.graphics, clocks.max.graphics',
    ]);
  });

  it('nounits with the command line pasted above it and a blank line (RTX 2080 Ti): the command is the one problem; [Unknown Error] is null', () => {
    const parsed = parseNvidiaSmiCsv(paste('no-index-nounits-unknown-error.mindminer-627.txt'));
    expect(parsed.problems.map((p) => [p.line, p.count])).toEqual([[1, 1]]);
    expect(parsed.samples).toEqual([
      [
        expect.objectContaining({
          index: 0,
          name: 'GeForce RTX 2080 Ti',
          util_pct: 100,
          mem_util_pct: 37,
          temp_c: 56,
          power_w: 228.82,
          power_limit_w: 210,
          fan_pct: 56,
          mem_clock_mhz: 6800, // clocks.current.memory
        }),
      ],
    ]);
    // power.default_limit printed [Unknown Error]: no metric takes it, and it is said, not guessed.
    expect(whats(parsed.unread)).toContain('fields no metric takes: clocks.current.graphics, power.default_limit');
  });

  it('two runs pasted one after the other, each header glued to its command: two GPUs, the header again is a new scrape, each odd line said once with a count', () => {
    const parsed = parseNvidiaSmiCsv(paste('no-index-two-runs.bpytop-26.txt'));
    expect(parsed.samples.map((s) => s.map((g) => [g.index, g.name, g.fan_pct, g.mem_total_mib, g.power_w, g.mem_clock_mhz]))).toEqual([
      [
        [0, 'GeForce GTX 1080 Ti', 29, 11175, 106.56, 5508],
        [1, 'GeForce GTX 1060 6GB', 29, 6078, 5.68, 405],
      ],
    ]);
    expect(parsed.problems.map((p) => [p.line, p.count])).toEqual([
      [1, 2],
      [6, 1],
      [7, 1],
      [8, 1],
    ]);
    expect(parsed.unread.find((u) => u.what.startsWith('no index, uuid or pci.bus_id'))?.count).toBe(2);
  });
});

describe('--query-gpu with an index, no header, no units', () => {
  it('reads 8 TITAN X rows given the fields (gpu_name style aliases too), the command line a problem', () => {
    const fields = ['index', 'gpu_uuid', 'gpu_name', 'temperature.gpu', 'utilization.gpu', 'memory.used', 'memory.total'];
    const parsed = parseNvidiaSmiCsv(paste('index-noheader-nounits.gpustat-5.txt'), fields);
    expect(parsed.problems.map((p) => p.line)).toEqual([1]);
    expect(parsed.samples).toHaveLength(1);
    expect(parsed.samples[0]!.map((g) => [g.index, g.temp_c, g.util_pct, g.mem_used_mib])).toEqual([
      [0, 25, 0, 802],
      [1, 54, 86, 10032],
      [2, 55, 85, 6442],
      [3, 58, 60, 6442],
      [4, 55, 84, 6459],
      [5, 54, 83, 6440],
      [6, 56, 83, 6451],
      [7, 55, 82, 6442],
    ]);
    expect(parsed.samples[0]![7]).toMatchObject({ uuid: 'GPU-f199c9ea-65d8-5382-aefe-a9e8fb48057b', name: 'GeForce GTX TITAN X', mem_total_mib: 12206 });
  });
});

describe('states no real paste in hand shows (rows built to NVIDIA’s documented forms)', () => {
  it('a -l loop by UUID with a timestamp column: a scrape per repeated UUID; [GPU requires reset] is null and said once with its count', () => {
    const loop = [
      'timestamp, uuid, temperature.gpu, utilization.gpu [%]',
      '2025/01/30 16:14:43.100, GPU-a, 41, 0 %',
      '2025/01/30 16:14:43.100, GPU-b, [GPU requires reset], [GPU requires reset]',
      '2025/01/30 16:14:44.100, GPU-a, 42, 3 %',
      '2025/01/30 16:14:44.100, GPU-b, [GPU requires reset], [GPU requires reset]',
    ].join('\n');
    const parsed = parseNvidiaSmiCsv(loop);
    expect(parsed.samples.map((s) => s.map((g) => [g.index, g.uuid, g.temp_c, g.util_pct]))).toEqual([
      [
        [0, 'GPU-a', 41, 0],
        [1, 'GPU-b', null, null],
      ],
      [
        [0, 'GPU-a', 42, 3],
        [1, 'GPU-b', null, null],
      ],
    ]);
    expect(parsed.unread.filter((u) => u.what.includes('[GPU requires reset]')).map((u) => [u.what, u.count])).toEqual([
      ['temperature.gpu: [GPU requires reset]', 2],
      ['utilization.gpu: [GPU requires reset]', 2],
    ]);
  });

  it('without any identity column, a new timestamp starts a new scrape', () => {
    const parsed = parseNvidiaSmiCsv('timestamp, temperature.gpu\n2025/01/30 16:14:43.100, 41\n2025/01/30 16:14:43.100, 50\n2025/01/30 16:14:44.100, 42\n');
    expect(parsed.samples.map((s) => s.map((g) => [g.index, g.temp_c]))).toEqual([
      [
        [0, 41],
        [1, 50],
      ],
      [[0, 42]],
    ]);
  });
});

describe('nvidia-smi -q', () => {
  it('a whole log (RTX 4070 Laptop, 566.36): the values NVIDIA documents for each section, N/A said once', () => {
    const parsed = parseNvidiaSmiQuery(paste('q-rtx4070-laptop.multilanguagelearning.txt'));
    expect(parsed.samples).toEqual([
      [
        expect.objectContaining({
          index: 0,
          pci_bus: '0000:01:00',
          uuid: 'GPU-1b724e78-eef5-4163-d43c-e4da15d41176',
          name: 'NVIDIA GeForce RTX 4070 Laptop GPU',
          util_pct: 0,
          mem_total_mib: 8188,
          mem_used_mib: 0,
          temp_c: 42,
          mem_temp_c: null,
          power_w: 1.97,
          power_limit_w: 61.24,
          sm_clock_mhz: 210,
          mem_clock_mhz: 405,
          fan_pct: null,
          pcie_gen: 4,
          pcie_gen_max: 4,
          pcie_width: 8,
          pcie_width_max: 8,
          ecc_sbe_volatile: null, // ECC is off on this GeForce: N/A, not 0
          remap_pending: false,
          remap_failure: false,
          throttle: ['gpu_idle'],
          processes: 0,
        }),
      ],
    ]);
    expect(whats(parsed.unread)).toEqual(['Temperature/Memory Current Temp: N/A', 'Fan Speed: N/A']);
  });

  it('a 2013 driver’s -d TEMPERATURE section: the old "Gpu" label and a four-digit domain', () => {
    const parsed = parseNvidiaSmiQuery(paste('q-d-temperature-geforce-6200.monitorix-28.txt'));
    expect(parsed.samples).toEqual([[expect.objectContaining({ index: 0, pci_bus: '0000:01:05', temp_c: 49, util_pct: null })]]);
  });
});

describe('nvidia-smi -q -x', () => {
  it('A100 with MIG (v12 DTD, 535): utilisation N/A under MIG is null; the MIG devices and the missing GPUs are said', () => {
    const parsed = parseNvidiaSmiXml(paste('q-x-a100-sxm4-v12.telegraf.xml'));
    expect(parsed.error).toBeUndefined();
    expect(parsed.gpus).toEqual([
      expect.objectContaining({
        index: 0,
        pci_bus: '0000:01:00',
        uuid: 'GPU-513536b6-7d19-9063-b049-1e69664bb298',
        name: 'NVIDIA A100-SXM4-80GB',
        util_pct: null,
        mem_used_mib: 50,
        mem_total_mib: 81920,
        temp_c: 27,
        mem_temp_c: 44,
        power_w: 67.03,
        power_limit_w: 500,
        sm_clock_mhz: 1275,
        mem_clock_mhz: 1593,
        pcie_gen: 4,
        pcie_width: 16,
        ecc_dbe_volatile: 0,
        remap_pending: null,
        throttle: [],
      }),
    ]);
    expect(whats(parsed.unread)).toEqual(
      expect.arrayContaining([
        'attached_gpus says 4, the document has 1 <gpu> (nvidia-smi -i chose some, or a GPU could not be read)',
        'MIG enabled: 4 MIG devices, read as their GPU (per-instance metrics not read)',
        'utilization/gpu_util: N/A',
      ]),
    );
  });

  it('A10G (v11 DTD, 515): power_readings and clocks_throttle_reasons, remapped rows, one process', () => {
    const parsed = parseNvidiaSmiXml(paste('q-x-a10g.telegraf.xml'));
    expect(parsed.gpus).toEqual([
      expect.objectContaining({
        pci_bus: '0000:00:1e',
        name: 'NVIDIA A10G',
        temp_c: 17,
        power_w: 25.58,
        power_limit_w: 300,
        pcie_gen: 1,
        pcie_gen_max: 4,
        pcie_width: 8,
        pcie_width_max: 16,
        fan_pct: 0,
        remap_pending: false,
        remap_failure: false,
        throttle: ['gpu_idle'],
        processes: 1,
      }),
    ]);
  });

  it('is refused with a reason, never expanded: a document that is not XML, one that is not nvidia-smi, entities and __proto__', () => {
    expect(parseNvidiaSmiXml('<a><b>').error).toMatch(/^not XML: /);
    expect(parseNvidiaSmiXml('<?xml version="1.0"?><log/>').error).toBe('no <nvidia_smi_log> element: not the output of nvidia-smi -q -x');
    const laughs = `<!DOCTYPE x [<!ENTITY a "${'a'.repeat(100)}"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><nvidia_smi_log><gpu id="00000000:01:00.0"><product_name>&b;</product_name></gpu></nvidia_smi_log>`;
    // The entity stays as written: a DOCTYPE never multiplies the input.
    expect(parseNvidiaSmiXml(laughs).gpus.map((g) => g.name)).toEqual(['&b;']);
    const polluting = parseNvidiaSmiXml('<nvidia_smi_log><gpu id="x"><__proto__>1</__proto__></gpu></nvidia_smi_log>');
    expect([polluting.gpus, polluting.error]).toEqual([[], expect.stringMatching(/^not XML: .*__proto__/)]);
  });
});

describe('telling the shapes apart', () => {
  it('XML, -q text and CSV, from their first lines', () => {
    expect(
      [
        'q-x-a10g.telegraf.xml',
        'q-rtx4070-laptop.multilanguagelearning.txt',
        'q-d-temperature-geforce-6200.monitorix-28.txt',
        'no-index-single-row.system-monitoring-center-57.csv',
      ].map((f) => nvidiaSmiShape(paste(f))),
    ).toEqual(['xml', 'query', 'query', 'csv']);
  });
});

describe('hostile input', () => {
  it('-q text and -q -x XML never throw on arbitrary text, nor on a real paste cut anywhere', () => {
    const xml = paste('q-x-a10g.telegraf.xml');
    const query = paste('q-rtx4070-laptop.multilanguagelearning.txt');
    fc.assert(
      fc.property(fc.string({ maxLength: 500 }), fc.nat({ max: xml.length }), fc.nat({ max: query.length }), (text, x, q) => {
        parseNvidiaSmiQuery(text);
        parseNvidiaSmiXml(text);
        expect(parseNvidiaSmiXml(xml.slice(0, x)).gpus.length).toBeLessThanOrEqual(1);
        expect(parseNvidiaSmiQuery(query.slice(0, q)).samples.length).toBeLessThanOrEqual(1);
      }),
      { numRuns: 200 },
    );
  });
});
