import { describe, expect, it } from 'vitest';
import { classify } from './classify.ts';
import { KernelLogParser, MAX_OPEN_BURSTS } from './kernel-log-parser.ts';
import { shippedCatalog } from '@gpualert/test-support';

// Hostile lines: one token repeated into a journald-sized (48 KiB) line, from the attack on the kernel
// parser (a quadratic "Oops" pattern) and the audit of every pattern here that followed. Synthetic.
// Their cost is measured in bench/kernel.bench.ts ("adversarial 48 KiB lines"), never asserted here:
// these tests pin what such a line is, and that the real lines beside them still read the same.

const catalog = shippedCatalog();
const fill = (token: string) => token.repeat(Math.ceil((48 * 1024) / token.length));
const what = (text: string) => {
  const c = classify(text);
  return c.type === 'event' ? [c.kind, c.hostFault ?? c.xid ?? c.process ?? ''] : [c.type];
};

describe('oops headers', () => {
  it('the oops headers kernels print are oopses, on every architecture', () => {
    // real: test/fixtures/kernel/wild/48-…, 46-…, 47-…
    expect(what('Oops: 0003 [#1] PREEMPT SMP NOPTI')).toEqual(['host', 'oops']);
    expect(what('Oops: Oops: 0000 [#1] SMP NOPTI')).toEqual(['host', 'oops']);
    // the kernel's own formats (arch/riscv and arch/mips traps.c "%s [#%d]" / "%s[#%d]:", arch/arm64 and
    // arch/arm "Internal error: %s: %x [#%d]"): synthetic lines in them
    expect(what('Oops [#1]')).toEqual(['host', 'oops']);
    expect(what('Oops[#1]:')).toEqual(['host', 'oops']);
    expect(what('Internal error: Oops: 0000000096000004 [#1] PREEMPT SMP')).toEqual(['host', 'oops']);
    expect(what('Internal error: Oops - undefined instruction: 0 [#1] SMP ARM')).toEqual(['host', 'oops']);
  });

  it('a line of repeated "Oops" whose [#n] is not an oops header\'s is not an oops', () => {
    expect(what(`${fill('Oops ')}`)).toEqual(['drop']);
    // the bug: "Oops" anywhere, then anything, then [#n] was an oops, and cost a scan to the line's end from each "Oops"
    expect(what(`${fill('Oops ')}end [#1]`)).toEqual(['drop']);
    // a real header followed by 48 KiB of anything is still an oops
    expect(what(`Oops: 0003 [#1] ${fill('Oops ')}`)).toEqual(['host', 'oops']);
  });

  it('100 adversarial 48 KiB lines through the parser: each is one dropped line, and a real Xid after them is still found', () => {
    const parser = new KernelLogParser({ catalog, referenceYear: 2026 });
    const line = `kernel: ${fill('Oops ')}end [#1]`;
    const events = [];
    for (let i = 0; i < 100; i += 1) events.push(...parser.push(line, 0));
    events.push(...parser.push('[ 1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.', 0));
    events.push(...parser.flush());
    expect(events.map((e) => [e.data.kind, e.data.xid])).toEqual([['xid', 79]]);
    expect(parser.stats).toMatchObject({ lines: 101, events: 1, dropped: 100 });
  });
});

describe('the other patterns the audit bounded', () => {
  it.each([
    // [a real line, what it is; a hostile line built on it, what that is]. The real lines are from
    // test/fixtures/kernel (dmesg-oom.log, dmesg-pcie-aer.log, the wild corpus) and this package's tests.
    [
      'NVRM: The NVIDIA GPU 0000:5d:00.0 (PCI ID: 10de:2330) installed in this system has fallen off the bus and is not responding to commands.',
      ['fallen_off_bus', ''],
      `NVRM: The NVIDIA GPU ${fill('0:')}`,
      ['drop'],
    ],
    [
      'Killed process 13536 (memorymonster) total-vm:33558652kB, anon-rss:920kB, file-rss:452kB',
      ['oom_kill', 'memorymonster'],
      fill('Killed process 1 ('),
      ['drop'],
    ],
    ['rcu: INFO: rcu_preempt self-detected stall on CPU', ['host', 'rcu_stall'], `rcu: ${fill('rcu_')}`, ['drop']],
    [
      'pcieport 0000:00:1c.5: AER: Multiple Corrected error received: 0000:00:1c.5',
      ['pcie_aer', ''],
      `pcieport 0000:00:1c.5: AER: ${fill('Fatal ')}`,
      ['drop'],
    ],
    [
      'NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)',
      ['xid', 154],
      `NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) ${fill('to 0x1 (')}`,
      ['xid', 154],
    ],
    [' ? update_curr+0xf0/0x1e0', ['detail'], `${fill(' ')}x`, ['drop']],
  ])('%s', (real, realIs, hostile, hostileIs) => {
    expect(what(real)).toEqual(realIs);
    expect(what(hostile)).toEqual(hostileIs);
  });

  it("an Xid 154 line whose recovery action is cut off takes the catalog's action, not a piece of the line", () => {
    const c = classify(`NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) ${fill('to 0x1 (')}`);
    expect(c.type === 'event' && c.action).toBeUndefined();
    const real = classify('NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)');
    expect(real.type === 'event' && real.action).toBe('Recovery action: GPU Reset Required (0x1).');
  });
});

describe('continuation lines', () => {
  it('a message followed by an endless run of continuation lines is one message cut at 64 KiB, never held whole', () => {
    const parser = new KernelLogParser({ catalog, referenceYear: 2026 });
    const events = [...parser.push('[ 1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.', 0)];
    for (let i = 0; i < 2_000; i += 1) events.push(...parser.push(`  ${'x'.repeat(1_000)}`, 0));
    events.push(...parser.flush());
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ kind: 'xid', xid: 79 });
    expect(events[0]!.data.message.length).toBe(65_536);
  });
});

describe('lines that share one clock', () => {
  it('20,000 OOM kills of different pids in one second open at most MAX_OPEN_BURSTS events at once; the oldest are told as the rest arrive, and none is lost', () => {
    const parser = new KernelLogParser({ catalog, referenceYear: 2026 });
    const line = (pid: number) => `[ 5000.123456] Out of memory: Killed process ${pid} (python) total-vm:1000kB, anon-rss:900kB, file-rss:0kB`;
    const kills = 20_000;
    let toldBeforeTheEnd = 0;
    for (let pid = 1; pid <= kills; pid += 1) toldBeforeTheEnd += parser.push(line(pid), 1_000).filter((e) => e.data.kind === 'oom_kill').length;
    const atTheEnd = parser.flush().filter((e) => e.data.kind === 'oom_kill');
    // Each kill is its own event (the control: they are not folded into one), all told in the end.
    expect(toldBeforeTheEnd + atTheEnd.length).toBe(kills);
    // What waited for the end was at most the bound (and the last line, still pending); the rest was told as the lines came.
    expect(atTheEnd.length).toBeLessThanOrEqual(MAX_OPEN_BURSTS + 1);
    expect(toldBeforeTheEnd).toBeGreaterThanOrEqual(kills - MAX_OPEN_BURSTS - 1);
  });
});
