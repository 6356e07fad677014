import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseKernelLog } from './parse-kernel-log.ts';
import { fromSysfsLinks, parseTopology, type PciTopology } from './pci-topology.ts';
import { shippedCatalog } from '@gpualert/test-support';

const catalog = shippedCatalog();
const ARRIVAL = Date.parse('2026-11-30T00:00:00Z');
const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/kernel/topology/${name}`, import.meta.url), 'utf8');

function topology(text: string): PciTopology {
  const result = parseTopology(text);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

describe('lspci -t trees', () => {
  it("a GPU behind a PCIe switch: the root port, the switch's upstream and downstream ports all have it below them", () => {
    const tree = topology(fixture('lspci-tv-grace-switch.txt'));
    expect(tree.isGpu('0008:05:00.0')).toBe(true); // "NVIDIA Corporation Device"
    expect(tree.upstreamOf('0008:05:00.0')).toEqual(['0008:02:02.0', '0008:01:00.0', '0008:00:00.0']);
    for (const port of ['0008:00:00.0', '0008:01:00.0', '0008:02:02.0']) expect(tree.below(port).gpus).toEqual(['0008:05:00.0']);
    // the sibling downstream ports feed the NVMe, the ASPEED VGA (not NVIDIA), USB and Ethernet
    for (const port of ['0008:02:00.0', '0008:02:03.0', '0008:02:04.0', '0008:02:05.0', '0008:06:00.0']) expect(tree.below(port).gpus).toEqual([]);
    expect(tree.isBridge('0008:02:01.0')).toBe(true); // an empty slot's port
    // the PMC-Sierra function is the switch upstream port's second function, on the root port's bus
    expect(tree.upstreamOf('0008:01:00.1')).toEqual(['0008:00:00.0']);
    expect(tree.below('0008:01:00.1').gpus).toEqual([]);
  });

  it("a laptop: the GPU below root port 1c.0, not below 1c.5 whose AER flood is the Wi-Fi card's", () => {
    const tree = topology(fixture('lspci-tv-laptop.txt'));
    expect(tree.size).toBe(19);
    expect(tree.below('0000:00:1c.0').gpus).toEqual(['0000:01:00.0']);
    expect(tree.below('0000:00:1c.5').gpus).toEqual([]);
    expect(tree.isGpu('0000:00:02.0')).toBe(false); // Intel's integrated graphics is not an NVIDIA GPU
  });

  it('lspci -t names nothing: the inventory says which devices below the switch are GPUs', () => {
    const tree = topology(fixture('lspci-t-two-gpus-switch.txt'));
    expect(tree.upstreamOf('0000:06:00.0')).toEqual(['0000:05:00.0', '0000:04:00.0', '0000:00:02.1']);
    expect(tree.upstreamOf('0000:0d:00.0')).toEqual(['0000:05:08.0', '0000:04:00.0', '0000:00:02.1']);
    expect(tree.below('0000:00:02.1').gpus).toEqual([]);
    const inventory = new Set(['0000:06:00.0', '0000:07:00.0']);
    expect(tree.below('0000:00:02.1', (a) => inventory.has(a)).gpus).toEqual(['0000:06:00.0', '0000:07:00.0']);
    expect(tree.below('0000:05:02.0', (a) => inventory.has(a)).gpus).toEqual(['0000:07:00.0']);
  });

  it("-tvnn ids tell GPUs from NVSwitches and audio functions (synthetic tree in lspci's format)", () => {
    const tree = topology(
      [
        '-[0000:00]-+-00.0  Intel Corporation Sky Lake-E DMI3 Registers [8086:2020]',
        '           +-01.0-[03-0a]----00.0-[04-0a]--+-00.0-[05]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]',
        '           |                               +-01.0-[06]----00.0  NVIDIA Corporation GH100 [H100 NVSwitch] [10de:22a3]',
        '           |                               \\-02.0-[07]--+-00.0  NVIDIA Corporation GP102 [TITAN Xp] [10de:1b02]',
        '           |                                            \\-00.1  NVIDIA Corporation GP102 HDMI Audio Controller [10de:10ef]',
        '           \\-1f.0  Intel Corporation C620 Series Chipset Family LPC Controller [8086:a1c1]',
      ].join('\n'),
    );
    expect(tree.below('0000:00:01.0')).toEqual({ gpus: ['0000:05:00.0', '0000:07:00.0'], nvswitches: ['0000:06:00.0'] });
  });

  it('a text that is not a tree is one clear error', () => {
    expect(parseTopology('hello')).toEqual({ ok: false, error: 'no PCI devices found (expected lspci -tvnn output, a sysfs listing or JSON)' });
    expect(parseTopology('           +-01.0-[03]----00.0')).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^line 1: a device at column 13 with no bus above it/),
    });
    expect(parseTopology('{"source":"json","devices":[{"address":"0000:3B:00.0"}]}')).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^not a PCI tree: devices\.0\.address/),
    });
  });
});

describe('sysfs device links', () => {
  it('link targets give each device its chain of bridges; the class file says which are GPUs', () => {
    // A real link of an Intel Battlemage GPU behind its card's switch (quoted on the intel-gfx list), plus
    // its bridges and a synthetic NVIDIA GPU, with the class and vendor files sysfs would give.
    const result = fromSysfsLinks([
      { target: '../../../devices/pci0000:00/0000:00:01.0', class: '0x060400', vendor: '0x8086' },
      { target: '../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0', class: '0x060400', vendor: '0x8086' },
      { target: '../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0', class: '0x060400', vendor: '0x8086' },
      { target: '../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:03:00.0', class: '0x030000', vendor: '0x8086', device: '0xe20b' },
      { target: '../../../devices/pci0000:17/0000:17:02.0/0000:18:00.0', class: '0x030200\n', vendor: '0x10de\n', device: '0x2330\n' },
      { target: 'not a link' },
    ]);
    if (!result.ok) throw new Error(result.error);
    expect(result.value.size).toBe(5);
    expect(result.value.upstreamOf('0000:03:00.0')).toEqual(['0000:02:01.0', '0000:01:00.0', '0000:00:01.0']);
    expect(result.value.isGpu('0000:03:00.0')).toBe(false); // not NVIDIA
    expect(result.value.below('0000:17:02.0').gpus).toEqual(['0000:18:00.0']);
    // the same as the text listing `ls -l /sys/bus/pci/devices/` prints
    const listing = topology('lrwxrwxrwx 1 root root 0 Mar 30 13:11 0000:18:00.0 -> ../../../devices/pci0000:17/0000:17:02.0/0000:18:00.0/\n');
    expect(listing.upstreamOf('0000:18:00.0')).toEqual(['0000:17:02.0']);
  });
});

describe("a port's AER error names the GPUs below it", () => {
  // Real root-port lines (test/fixtures/kernel/dmesg-pcie-aer.log) against a synthetic tree of that host.
  const log = [
    '[256236.152631] pcieport 0000:89:02.0: DPC: containment event, status:0x1f01 source:0x0000',
    '[256236.152634] pcieport 0000:89:02.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)',
    '[256236.164207] pcieport 0000:89:02.0: AER:   device [8086:347a] error status/mask=00000020/00100000',
  ].join('\n');
  const tree = {
    source: 'json',
    devices: [
      { address: '0000:89:02.0', class: '060400' },
      { address: '0000:8a:00.0', parent: '0000:89:02.0', class: '060400' },
      { address: '0000:8b:00.0', parent: '0000:8a:00.0', class: '060400' },
      { address: '0000:8c:00.0', parent: '0000:8b:00.0', vendor: '10de', device: '2330', class: '030200' },
      { address: '0000:8b:01.0', parent: '0000:8a:00.0', class: '060400' },
      { address: '0000:8d:00.0', parent: '0000:8b:01.0', vendor: '10de', device: '2330', class: '030200' },
      { address: '0000:8b:02.0', parent: '0000:8a:00.0', class: '060400' },
      { address: '0000:8e:00.0', parent: '0000:8b:02.0', vendor: '10de', device: '22a3', class: '068000' },
    ],
  };

  it('with the topology and the inventory: the GPUs, their indexes and the NVSwitch below the port', () => {
    const { events } = parseKernelLog(
      log,
      {
        catalog,
        topology: topology(JSON.stringify(tree)),
        gpuIndexByPci: new Map([
          ['0000:8c:00', 2],
          ['0000:8d:00', 3],
        ]),
      },
      ARRIVAL,
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({
      kind: 'pcie_aer',
      severity: 'critical',
      port: { address: '0000:89:02.0', gpus: ['0000:8c:00', '0000:8d:00'], gpu_indexes: [2, 3], nvswitches: ['0000:8e:00'] },
    });
    expect(events[0]!.data.meaning).toMatch(/below it: GPU 2 \(0000:8c:00\), GPU 3 \(0000:8d:00\), 1 NVSwitch/);
    expect(events[0]!.data.pci_bus).toBeUndefined(); // the port is not a GPU
  });

  it("without the topology: still the port's event, with its address and no GPUs named", () => {
    const { events } = parseKernelLog(log, { catalog }, ARRIVAL);
    expect(events.map((e) => e.data.port)).toEqual([{ address: '0000:89:02.0' }]);
  });

  it("an uncorrected error on a device with no driver name is the port's only when the topology says it is a bridge", () => {
    const line = '0000:8b:01.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Requester ID)';
    expect(parseKernelLog(line, { catalog }, ARRIVAL).events).toEqual([]);
    const known = parseKernelLog(line, { catalog, topology: topology(JSON.stringify(tree)) }, ARRIVAL).events;
    expect(known.map((e) => e.data.port)).toEqual([{ address: '0000:8b:01.0', gpus: ['0000:8d:00'] }]);
  });

  it("a port's corrected errors: a warning above GPUs, noise above none", () => {
    const corrected = (port: string) => `[   10.000000] pcieport ${port}: AER: Corrected error received: ${port}`;
    const known = { catalog, topology: topology(JSON.stringify(tree)) };
    expect(parseKernelLog(corrected('0000:89:02.0'), known, ARRIVAL).events.map((e) => [e.data.severity, e.data.port?.gpus])).toEqual([
      ['warning', ['0000:8c:00', '0000:8d:00']],
    ]);
    expect(parseKernelLog(corrected('0000:8b:02.0'), known, ARRIVAL).events.map((e) => e.data.port?.nvswitches)).toEqual([['0000:8e:00']]);
    const laptop = { catalog, topology: topology(fixture('lspci-tv-laptop.txt')) };
    expect(parseKernelLog(corrected('0000:00:1c.5'), laptop, ARRIVAL).events).toEqual([]); // the Wi-Fi card's port
    expect(parseKernelLog(corrected('0000:00:1c.0'), laptop, ARRIVAL).events).toHaveLength(1); // the GeForce's
  });
});
