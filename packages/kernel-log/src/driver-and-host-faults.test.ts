import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { classify } from './classify.ts';
import { parseKernelLog } from './parse-kernel-log.ts';
import { shippedCatalog } from '@gpualert/test-support';

const catalog = shippedCatalog();
const ARRIVAL = Date.parse('2026-11-30T00:00:00Z');
const host = (name: string) => readFileSync(new URL(`../../../test/fixtures/kernel/host/${name}`, import.meta.url), 'utf8');
const parse = (name: string, gpus?: Map<string, number>) =>
  parseKernelLog(host(name), { catalog, referenceYear: 2026, ...(gpus ? { gpuIndexByPci: gpus } : {}) }, ARRIVAL);

describe('the driver failing to start a GPU', () => {
  it('RmInitAdapter with the address: pci_bus and GPU index set; its rm_init_adapter line is the same start, not a second', () => {
    const { events } = parse('syslog-rminitadapter.log', new Map([['0000:0a:00', 5]]));
    expect(events).toHaveLength(6); // six tries, minutes apart
    for (const e of events) {
      expect(e.data).toMatchObject({ kind: 'other_gpu', pci_bus: '0000:0a:00', gpu: 5, severity: 'error', count: 1 });
      expect(e.data.details).toEqual(['NVRM: GPU 0000:0a:00.0: rm_init_adapter failed, device minor number 5']);
    }
    expect(events.map((e) => e.ts)).toEqual([
      '2025-12-02T11:49:53.000Z',
      '2025-12-02T11:50:34.000Z',
      '2025-12-02T11:52:03.000Z',
      '2025-12-02T11:54:40.000Z',
      '2025-12-02T11:54:42.000Z',
      '2025-12-02T11:54:56.000Z',
    ]);
  });

  it("two GPUs' failed starts are two GPUs' events, never folded into one", () => {
    const { events } = parse('rminitadapter-two-gpus.log');
    expect(events.map((e) => [e.data.pci_bus, e.data.count])).toEqual([
      ['0000:04:01', 1],
      ['0000:04:02', 1],
      ['0000:04:02', 1],
      ['0000:04:01', 1],
      ['0000:04:01', 1],
    ]);
  });

  it('address-less lines of two GPUs do not fold, the same line repeated does', () => {
    // synthetic: the old driver's address-less failure for two minor numbers, 1 ms apart
    const two = parseKernelLog(
      [
        '[   36.536044] NVRM: rm_init_adapter failed for device bearing minor number 0',
        '[   36.537044] NVRM: rm_init_adapter failed for device bearing minor number 1',
      ].join('\n'),
      { catalog },
      ARRIVAL,
    ).events;
    expect(two.map((e) => e.data.meaning)).toEqual([
      'the NVIDIA driver could not initialise the GPU (RmInitAdapter failed, minor number 0)',
      'the NVIDIA driver could not initialise the GPU (RmInitAdapter failed, minor number 1)',
    ]);
    const same = parseKernelLog(
      [
        '[   36.536044] NVRM: rm_init_adapter failed for device bearing minor number 0',
        '[   36.537044] NVRM: rm_init_adapter failed for device bearing minor number 0',
      ].join('\n'),
      { catalog },
      ARRIVAL,
    ).events;
    expect(same).toHaveLength(1);
  });

  it('the old driver: "GPU at … has fallen off the bus" with the address; RmInitAdapter without one is one failed start', () => {
    const { events } = parse('old-driver-fallen-off-bus.log');
    expect(events.map((e) => [e.data.kind, e.data.pci_bus ?? null, e.data.severity])).toEqual([
      ['fallen_off_bus', '0000:01:00', 'critical'],
      ['other_gpu', null, 'error'],
    ]);
    expect(events[1]!.data.details).toEqual([
      'NVRM: rm_init_adapter failed for device bearing minor number 0',
      'NVRM: nvidia_frontend_open: minor 0, module->open() failed, error -5',
    ]);
  });

  it('"The NVIDIA probe routine was not called": one event per load, its notice lines attached', () => {
    const { events } = parse('probe-not-called.log');
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ kind: 'other_gpu', severity: 'error', count: 2 });
    expect(events[0]!.data.meaning).toMatch(/another driver/);
    expect(events[0]!.data.details).toContain('NVRM: No NVIDIA graphics adapter probed!');
  });

  it('"The NVIDIA GPU … is not supported" over several lines, joined or each with its prefix', () => {
    // synthetic lines in the driver's format (nv.c's unsupported-GPU notice)
    const joined = [
      '[    3.100000] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c82)',
      '               NVRM: installed in this system is not supported by the',
      '               NVRM: NVIDIA 535.54.03 driver release.',
    ].join('\n');
    const prefixed = joined.replace(/^ {15}/gm, 'Dec  2 11:49:53 worker4 kernel: ');
    for (const log of [joined, prefixed]) {
      const { events } = parseKernelLog(log, { catalog }, ARRIVAL);
      expect(events.map((e) => [e.data.kind, e.data.pci_bus, e.data.severity])).toEqual([['other_gpu', '0000:01:00', 'error']]);
    }
    expect(parseKernelLog(joined, { catalog }, ARRIVAL).events[0]!.data.meaning).toBe('the installed NVIDIA driver does not support this GPU');
  });
});

describe('host faults', () => {
  it('an uncorrectable memory error is one critical memory_ue event (drain), its dumps attached', () => {
    const { events } = parse('memory-ue-hwpoison.log');
    const ue = events.filter((e) => e.data.host_fault === 'memory_ue');
    expect(ue).toHaveLength(1);
    expect(ue[0]!.data).toMatchObject({ kind: 'host', severity: 'critical', message: 'mce: Uncorrected hardware memory error in user-access at 7e025e400' });
    expect(ue[0]!.data.action).toMatch(/Drain/);
    expect(ue[0]!.data.details).toContain('EDAC skx MC3: HANDLING MCE MEMORY ERROR');
    expect(ue[0]!.data.details!.some((d) => d.startsWith('EDAC MC3: 1 UE memory read error'))).toBe(true);
    // the firmware's record (APEI/GHES) printed inside the report is its detail, not a second fault
    expect(ue[0]!.data.details).toContain('{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0');
    // the corrected machine-check summary before it stays a warning of its own
    expect(events.filter((e) => e.data.host_fault === 'mce').map((e) => e.data.severity)).toEqual(['warning']);
    expect(events).toHaveLength(2);
  });

  it("a console capture: the UE critical, then one DIMM's burst of corrected errors (each under a second apart) one counted warning", () => {
    const { events } = parse('console-memory-ue.log');
    expect(events.map((e) => [e.ts, e.data.host_fault, e.data.severity, e.data.count])).toEqual([
      ['2023-06-22T21:55:31.352Z', 'memory_ue', 'critical', 1],
      ['2023-06-22T21:55:31.778Z', 'memory_ce', 'warning', 6], // the cut "3 CE memorERROR" line counts too
    ]);
    expect(events[0]!.data.details).toEqual(['EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (xxx xxx)']);
  });

  it.each([
    // real lines (sources: test/fixtures/kernel/dmesg-misc-kernel.log's, the amdgpu commit 5e08e9c742a0 message, and lines quoted in radiasoft/devops#134)
    ['watchdog: BUG: soft lockup - CPU#18 stuck for 27s! [python3:2254956]', 'soft_lockup', 'error'],
    ['INFO: task jfsmount:136986 blocked for more than 120 seconds.', 'hung_task', 'error'],
    ['Kernel panic - not syncing: hung_task: blocked tasks', 'panic', 'critical'],
    ['general protection fault, probably for non-canonical address 0xd5e5a4ae79d24a32: 0000 [#1] PREEMPT SMP PTI', 'gpf', 'error'],
    ['mce: [Hardware Error]: Machine check events logged', 'mce', 'warning'],
    [
      'EDAC MC1: 1 CE memory scrubbing error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0xee30a0 offset:0x0 grain:32 syndrome:0x0 -  area:DRAM err_code:0008:00c2 socket:1 ha:0 channel_mask:1 rank:0)',
      'memory_ce',
      'warning',
    ],
    // synthetic, in the kernel's formats (kernel/watchdog_hld.c, mm/fault.c, kernel/rcu, arch/x86/kernel/nmi.c)
    ['NMI watchdog: Watchdog detected hard LOCKUP on cpu 5', 'nmi_watchdog', 'error'],
    ['BUG: kernel NULL pointer dereference, address: 0000000000000008', 'bug', 'error'],
    ['Oops: 0000 [#1] PREEMPT SMP NOPTI', 'oops', 'error'],
    ['BUG: scheduling while atomic: swapper/0/0/0x00000002', 'bug', 'error'],
    ['rcu: INFO: rcu_preempt self-detected stall on CPU', 'rcu_stall', 'warning'],
    ['Uhhuh. NMI received for unknown reason 2d on CPU 0.', 'nmi', 'error'],
    ['{1}[Hardware Error]: event severity: fatal', 'mce', 'critical'],
    ['mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 4: b200000000070f0f', 'mce', 'critical'],
  ] as const)('%s', (line, fault, severity) => {
    const { events } = parseKernelLog(`[  100.000000] ${line}`, { catalog }, ARRIVAL);
    expect(events.map((e) => [e.data.kind, e.data.host_fault, e.data.severity])).toEqual([['host', fault, severity]]);
  });

  it('a BUG line and the Oops after it are one crash report; its stack trace is detail', () => {
    // synthetic trace in the kernel's format
    const log = [
      '[  100.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008',
      '[  100.000010] #PF: supervisor read access in kernel mode',
      '[  100.000020] Oops: 0000 [#1] PREEMPT SMP NOPTI',
      '[  100.000030] CPU: 3 PID: 1234 Comm: python3 Tainted: P           OE     5.15.0-1053-nvidia #54-Ubuntu',
      '[  100.000040] RIP: 0010:free_fw_priv+0xd/0x70',
      '[  100.000050] Call Trace:',
      '[  100.000060]  <TASK>',
      '[  100.000070]  release_firmware+0x55/0x80',
    ].join('\n');
    const { events } = parseKernelLog(log, { catalog }, ARRIVAL);
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ host_fault: 'bug', count: 1 });
    expect(events[0]!.data.details).toContain('Oops: 0000 [#1] PREEMPT SMP NOPTI');
    expect(events[0]!.data.details).toContain('Call Trace:');
  });

  it('user-space traps and the "end Kernel panic" trailer are not new faults', () => {
    // synthetic, in the kernel's formats
    expect(classify('traps: python3[4242] general protection fault ip:7f0 sp:7ffc error:0 in libc.so.6[7f0+195000]').type).toBe('drop');
    expect(classify('---[ end Kernel panic - not syncing: Fatal exception ]---').type).toBe('detail');
  });
});
