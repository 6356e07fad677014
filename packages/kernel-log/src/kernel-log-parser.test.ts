import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KernelLogParser } from './kernel-log-parser.ts';
import { parseKernelLog } from './parse-kernel-log.ts';
import { shippedCatalog } from '@gpualert/test-support';

const catalog = shippedCatalog();
const ARRIVAL = Date.parse('2026-11-30T00:00:00Z');
const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/kernel/${name}`, import.meta.url), 'utf8');
const parse = (name: string, gpus?: Map<string, number>) =>
  parseKernelLog(fixture(name), { catalog, referenceYear: 2026, ...(gpus ? { gpuIndexByPci: gpus } : {}) }, ARRIVAL);

describe('kernel log fixtures, as an operator would read them', () => {
  it("dmesg-xid.log: every Xid with its code, GPU address, process and the catalog's judgement", () => {
    const { events, stats } = parse('dmesg-xid.log');
    const xids = events.filter((e) => e.data.kind === 'xid');
    expect(xids.map((e) => e.data.xid)).toEqual([
      13, 43, 13, 119, 119, 94, 63, 79, 149, 154, 149, 149, 149, 154, 154, 149, 145, 145, 48, 79, 119, 145, 31, 62, 31,
    ]);
    const [app13, , sm13] = xids;
    expect(app13!.data).toMatchObject({ pci_bus: '0000:38:00', severity: 'warning', count: 2, meaning: 'Graphics Engine Exception' });
    expect(app13!.data.pid).toBeUndefined(); // pid='<unknown>' is not a pid
    expect(app13!.ts).toBe('2025-01-21T04:41:44.283Z');
    expect(sm13!.data).toMatchObject({ pci_bus: '0000:cb:00', count: 3 }); // three lines per SM, one event
    expect(xids[3]!.data).toMatchObject({ xid: 119, pid: 2024380, process: 'nvidia-smi', severity: 'critical' });
    expect(xids[7]!.data).toMatchObject({ xid: 79, pci_bus: '0000:91:00', severity: 'critical' });
    expect(xids[7]!.data.action).toMatch(/reboot/);
    // NVLink5: the Fatal/Nonfatal token decides, not the code.
    expect(xids[8]!.data).toMatchObject({ xid: 149, pci_bus: '0009:01:00', severity: 'critical' });
    expect(xids[15]!.data).toMatchObject({ xid: 149, pci_bus: '0018:01:00', severity: 'warning' });
    expect(xids[16]!.data).toMatchObject({ xid: 145, pid: 11436, process: 'cache_mgr_main', severity: 'warning' });
    // Xid 154 carries the recovery action for the Xid before it.
    expect(xids[9]!.data).toMatchObject({ xid: 154, severity: 'error', action: 'Recovery action: Drain and Reset (0x4).' });
    expect(xids[13]!.data.action).toBe('Recovery action: GPU Reset Required (0x1).');
    expect(xids[18]!.data).toMatchObject({ xid: 48, pci_bus: '0000:07:00', severity: 'critical' });
    expect(xids[23]!.data).toMatchObject({ xid: 62, pid: 2763 });
    // the "GPU at PCI" identity lines are not events
    expect(events).toHaveLength(25);
    expect(stats.dropped).toBe(2);
  });

  it('dmesg-gpu-fallen-off-bus.log: one critical event per lost GPU, with and without an Xid line', () => {
    const { events } = parse('dmesg-gpu-fallen-off-bus.log');
    const critical = events.filter((e) => e.data.severity === 'critical');
    expect(critical.map((e) => [e.data.kind, e.data.pci_bus])).toEqual([
      ['xid', '0000:91:00'],
      ['fallen_off_bus', '0000:5d:00'],
      ['xid', '0000:5d:00'],
    ]);
    // the "GPU has fallen off the bus" line after Xid 79 is the same fault, attached as detail
    expect(critical[0]!.data.details).toEqual([
      'NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.',
      'NVRM: GPU 0000:91:00.0: GPU serial number is 5207162976185.',
    ]);
    // the multi-line message without an Xid is joined into one
    expect(critical[1]!.data.message).toBe(
      'NVRM: The NVIDIA GPU 0000:5d:00.0 (PCI ID: 10de:2330) installed in this system has fallen off the bus and is not responding to commands.',
    );
    expect(events.filter((e) => e.data.kind === 'other_gpu').map((e) => e.data.severity)).toEqual(['error', 'error']);
  });

  it('dmesg-gsp-xid119-incident.log: the RPC tables and stack trace attach to the first Xid 119', () => {
    const { events, stats } = parse('dmesg-gsp-xid119-incident.log');
    expect(events.map((e) => e.data.kind)).toEqual(['xid', 'xid', 'xid', 'gsp', 'xid', 'xid']);
    const first = events[0]!.data;
    expect(first.details).toHaveLength(34);
    expect(first.details![0]).toMatch(/GSP RPC buffer contains function 103/);
    expect(first.details).toContain('Call Trace:');
    expect(events[3]!.data).toMatchObject({ kind: 'gsp', pci_bus: '0000:9b:00', severity: 'error' });
    expect(events.map((e) => e.ts)).toEqual([
      '2025-02-23T16:24:18.000Z',
      '2025-02-23T16:24:24.000Z',
      '2025-02-23T16:24:30.000Z',
      '2025-02-23T16:24:36.000Z',
      '2025-02-23T16:27:12.000Z',
      '2025-02-23T16:30:13.000Z',
    ]);
    expect(stats.dropped).toBe(3); // the identity lines and the clocksource noise
  });

  it('dmesg-ecc-rowremap.log: ECC and row-remap Xids with the chosen severities', () => {
    const { events } = parse('dmesg-ecc-rowremap.log');
    expect(events.map((e) => [e.data.xid, e.data.severity])).toEqual([
      [94, 'error'],
      [63, 'warning'],
      [48, 'critical'],
      [95, 'critical'],
    ]);
    expect(events[1]!.data.pci_bus).toBe('0000:10:1c');
  });

  it('dmesg-nvlink-nvswitch.log: SXid by Fatal token with its register dumps, NVLink training failures', () => {
    const { events } = parse('dmesg-nvlink-nvswitch.log');
    const sxid = events.filter((e) => e.data.kind === 'sxid');
    expect(sxid.map((e) => [e.data.pci_bus, e.data.xid, e.data.severity])).toEqual([
      ['0000:06:00', 20034, 'critical'],
      ['0000:05:00', 20034, 'critical'],
      ['0000:07:00', 20034, 'critical'],
    ]);
    expect(sxid[1]!.data.count).toBe(2);
    expect(events.filter((e) => e.data.kind === 'nvlink')).toHaveLength(3); // three 4-second-apart pairs
  });

  it("dmesg-pcie-aer.log: AER on a GPU's address and a root port's own fatal error; other devices are dropped", () => {
    const withoutInventory = parse('dmesg-pcie-aer.log').events;
    expect(withoutInventory.map((e) => [e.data.kind, e.data.pci_bus, e.data.port?.address, e.data.severity])).toEqual([
      ['pcie_aer', undefined, '0000:89:02.0', 'critical'],
      // a root port's own corrected errors: a warning while the topology is unknown (it may feed a GPU)
      ['pcie_aer', undefined, '0000:00:1c.5', 'warning'],
      ['pcie_aer', '0000:e3:00', undefined, 'warning'],
    ]);
    // DPC's containment, then the port's own fatal AER error and its register dump: one event, raised to critical
    const port = withoutInventory[0]!.data;
    expect(port.count).toBe(1);
    expect(port.message).toBe('pcieport 0000:89:02.0: DPC: containment event, status:0x1f01 source:0x0000');
    expect(port.details).toEqual([
      'pcieport 0000:89:02.0: DPC: unmasked uncorrectable error detected reason 0 ext_reason 0',
      'pcieport 0000:89:02.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)',
      'pcieport 0000:89:02.0: AER:   device [8086:347a] error status/mask=00000020/00100000',
      'pcieport 0000:89:02.0: AER:    [ 5] SDES                   (First)',
    ]);
    // its register dump and the two "error received" lines after it are that one report
    expect(withoutInventory[1]!.data.details).toContain('pcieport 0000:00:1c.5: AER: Multiple Corrected error received: 0000:00:1c.5');
    expect(withoutInventory[2]!.data.details).toEqual([
      'nvidia 0000:e3:00.0:   device [10de:2330] error status/mask=00000001/0000e000',
      'nvidia 0000:e3:00.0:    [ 0] RxErr                  (First)',
    ]);
    // With the inventory, the root port's report about the GPU counts and the GPU index is known.
    const withInventory = parse('dmesg-pcie-aer.log', new Map([['0000:e3:00', 5]])).events.filter((e) => !e.data.port);
    expect(withInventory.map((e) => [e.ts, e.data.gpu, e.data.count])).toEqual([
      ['2026-08-17T04:12:33.000Z', 5, 2],
      ['2026-08-17T04:12:34.000Z', 5, 1], // "Multiple Corrected error received" a second later
    ]);
  });

  it('dmesg-oom.log: one event per kill with its pid and name (the old two-line report is one kill)', () => {
    const { events } = parse('dmesg-oom.log');
    expect(events.map((e) => [e.data.pid, e.data.process])).toEqual([
      [13536, 'memorymonster'],
      [19667, 'evil-program2'],
      [123, 'httpd'],
      [123, 'httpd'],
    ]);
    // "Kill process … or sacrifice child" then "Killed process": one kill, the second line its detail
    expect(events[0]!.data.count).toBe(1);
    expect(events[0]!.data.details![0]).toBe('Killed process 13536 (memorymonster) total-vm:33558652kB, anon-rss:920kB, file-rss:452kB');
    // the same victim killed again two minutes later is a second kill
    expect(events[2]!.ts).not.toBe(events[3]!.ts);
  });

  it('dmesg-thermal.log and dmesg-misc-kernel.log: host health, not noise', () => {
    const thermal = parse('dmesg-thermal.log').events;
    expect(thermal.map((e) => [e.data.kind, e.data.severity])).toEqual([
      ['thermal', 'warning'],
      ['thermal', 'warning'],
      ['host', 'warning'],
      ['thermal', 'warning'],
      ['thermal', 'warning'],
      ['host', 'warning'],
    ]);
    // "Machine check events logged" is the corrected-error summary: a warning, not a drain
    expect(thermal[2]!.data).toMatchObject({ host_fault: 'mce', severity: 'warning' });
    const misc = parse('dmesg-misc-kernel.log').events;
    expect(misc.map((e) => [e.data.kind, e.data.host_fault ?? null, e.data.severity])).toEqual([
      ['host', 'soft_lockup', 'error'],
      ['host', 'soft_lockup', 'error'],
      ['host', 'hung_task', 'error'],
      ['host', 'panic', 'critical'],
      ['other_gpu', null, 'info'], // the libnccl segfault; nvidia-peermem's "invalid context" is noise
    ]);
    expect(misc[3]!.data).toMatchObject({ severity: 'critical' });
    expect(misc[3]!.data.details!.length).toBeGreaterThan(10); // the panic's stack trace
  });

  it('kmsg-raw.log: dictionary lines, driver chatter and nvidia-peermem\'s harmless "invalid context" are dropped', () => {
    const { events, stats } = parse('kmsg-raw.log');
    expect(events).toEqual([]);
    expect(stats).toMatchObject({ lines: 9, dropped: 9 });
    // a peermem error that is not "invalid context" is still one (synthetic line, the driver's format)
    const real = parseKernelLog('6,3973,227996636,-;nvidia-peermem nv_mem_get_pages:251 ERROR could not pin pages', { catalog }, ARRIVAL).events;
    expect(real.map((e) => e.data.kind)).toEqual(['other_gpu']);
  });

  it('timestamp-prefixes.txt: every prefix gives the same events, a libnccl segfault kept as context', () => {
    const { events } = parse('timestamp-prefixes.txt');
    expect(events.map((e) => [e.data.kind, e.data.xid ?? null, e.ts])).toEqual([
      ['xid', 149, '2026-11-30T00:00:00.000Z'], // uptime only, no boot time given: arrival time
      ['xid', 119, '2025-02-23T16:24:18.000Z'],
      ['xid', 43, '2025-01-21T04:41:44.287Z'],
      ['xid', 63, '2024-01-15T10:30:45.123Z'],
      ['thermal', null, '2026-04-28T13:48:01.000Z'],
      ['xid', 79, '2026-09-08T01:00:00.000Z'],
      ['other_gpu', null, '2025-01-21T04:41:44.285Z'],
    ]);
    expect(events[6]!.data).toMatchObject({ pid: 2536443, process: 'pt_main_thread', severity: 'info' });
  });

  it('maps the PCI address to the GPU index through the inventory, and keeps a MIG instance', () => {
    const { events } = parseKernelLog(
      'NVRM: Xid (PCI:0000:3b:00 GPU-I:02 GPU-CI:01): 43, pid=77, name=python, Ch 00000008',
      { catalog, gpuIndexByPci: new Map([['0000:3b:00', 3]]) },
      ARRIVAL,
    );
    expect(events[0]!.data).toMatchObject({ gpu: 3, mig: { gpu_instance: 2, compute_instance: 1 }, pid: 77, process: 'python' });
  });

  it('never drops an unknown Xid', () => {
    const { events } = parseKernelLog('[ 1.0] NVRM: Xid (PCI:0000:01:00): 999, pid=1, name=x, something new', { catalog }, ARRIVAL);
    expect(events[0]!.data).toMatchObject({ xid: 999, severity: 'warning', meaning: 'unknown Xid' });
  });
});

describe('KernelLogParser live', () => {
  it('emits a burst once the wall clock passes the gap, with no further line', () => {
    const parser = new KernelLogParser({ catalog, burstGapMs: 300 });
    const t = 1_000_000;
    expect(parser.push("NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", t, 0)).toEqual([]);
    expect(parser.push('NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.', t + 1, 100)).toEqual([]);
    expect(parser.tick(t + 200)).toEqual([]);
    expect(parser.resumePosition()).toBe(0);
    const events = parser.tick(t + 400);
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ xid: 79, details: ['NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.'] });
    expect(parser.resumePosition()).toBeUndefined();
  });
});

describe('property: arbitrary input', () => {
  const noise = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc
      .constantFrom(...fixture('dmesg-misc-kernel.log').split('\n'), ...fixture('dmesg-xid.log').split('\n'))
      .chain((line) => fc.nat({ max: line.length }).map((cut) => line.slice(0, cut))),
  );

  it('never throws, on random and truncated lines', () => {
    fc.assert(
      fc.property(fc.array(noise, { maxLength: 30 }), (lines) => {
        const parser = new KernelLogParser({ catalog });
        for (const line of lines) parser.push(line, ARRIVAL);
        parser.flush();
      }),
      { numRuns: 500 },
    );
  });

  it('never makes an event from a line that is not about a GPU or the host', () => {
    const unrelated = fc
      .stringMatching(/^[a-z ]{0,60}$/)
      .filter((s) => !/nvrm|nvidia|xid|aer|pcie|oom|killed|temperature|lockup|panic|segfault|error|blocked|power|hardware|machine/i.test(s));
    const prefixed = fc.tuple(fc.constantFrom('', '[ 12.345678] ', 'Apr 28 13:48:01 h kernel: ', '6,1,2,-;', '<4>'), unrelated).map(([p, s]) => p + s);
    fc.assert(
      fc.property(fc.array(prefixed, { maxLength: 20 }), (lines) => {
        const { events } = parseKernelLog(lines.join('\n'), { catalog }, ARRIVAL);
        expect(events).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
