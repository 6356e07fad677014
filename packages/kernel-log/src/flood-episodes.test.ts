import { shippedCatalog, xidFlood, XID_FLOOD_BUSES } from '@gpualert/test-support';
import { describe, expect, it } from 'vitest';
import { KernelLogParser, type ParsedKernelEvent } from './kernel-log-parser.ts';

const GPUS = new Map<string, number>(XID_FLOOD_BUSES.map((bus, i) => [bus, i]));
const START = Date.UTC(2026, 2, 1, 10);
const HOUR = 3_600_000;

function parse(lines: readonly string[], arrivalMs: number): { events: ParsedKernelEvent[]; parser: KernelLogParser } {
  const parser = new KernelLogParser({ catalog: shippedCatalog(), gpuIndexByPci: GPUS });
  const events: ParsedKernelEvent[] = [];
  lines.forEach((line, i) => events.push(...parser.push(line, arrivalMs, i)));
  events.push(...parser.flush());
  return { events, parser };
}

describe('a flood of one Xid is one counted episode per GPU and code', () => {
  it("an hour of Xid 95 (NVSentinel's 29 distinct lines, two GPUs): about one event a minute per GPU, every line counted, first and last times kept", () => {
    const lines = xidFlood({ lines: 200_000, startMs: START, spacingMs: HOUR / 200_000 });
    const { events, parser } = parse(lines, START + 2 * HOUR);
    expect(events.every((e) => e.data.kind === 'xid' && e.data.xid === 95)).toBe(true);
    for (const gpu of [0, 1]) {
      const mine = events.filter((e) => e.data.gpu === gpu);
      // One event a minute while it lasts (and the last count when it ends), not one per line.
      expect(mine.length).toBeGreaterThanOrEqual(55);
      expect(mine.length).toBeLessThanOrEqual(62);
      expect(mine.reduce((n, e) => n + (e.data.count ?? 1), 0)).toBe(100_000);
      const last = mine.at(-1)!.data.episode;
      expect(last).toEqual({
        first_ts: new Date(START + gpu * (HOUR / 200_000)).toISOString(),
        last_ts: new Date(START + (199_998 + gpu) * (HOUR / 200_000)).toISOString(),
        lines: 100_000,
      });
      // The first event is told as any burst (no episode yet), at the flood's first line.
      expect(mine[0]!.data.episode).toBeUndefined();
      expect(mine[0]!.ts).toBe(new Date(START + gpu * (HOUR / 200_000)).toISOString());
    }
    expect(parser.stats.lines).toBe(200_000);
    expect(parser.stats.folded).toBeGreaterThan(150_000);
  });

  it('the fast path (prefix shape and message known) tells what taking every line apart tells, to the second', () => {
    const lines = xidFlood({ lines: 60_000, startMs: START, spacingMs: 50 });
    // Two host names of different lengths, line by line: no prefix has the last one's shape, so every line is taken apart.
    const slowLines = lines.map((line, i) => (i % 2 === 0 ? line : line.replace(' gpu-node-07 ', ' gpu-node-7 ')));
    const fast = parse(lines, START + HOUR);
    const slow = parse(slowLines, START + HOUR);
    expect(fast.parser.stats.folded).toBeGreaterThan(50_000);
    const summary = (events: ParsedKernelEvent[], gpu: number) => {
      const mine = events.filter((e) => e.data.gpu === gpu);
      return { lines: mine.reduce((n, e) => n + (e.data.count ?? 1), 0), first: mine[0]!.ts, last: mine.at(-1)!.data.episode };
    };
    for (const gpu of [0, 1]) expect(summary(fast.events, gpu)).toEqual(summary(slow.events, gpu));
    // Both tell about one event a minute (the fast path on the second the count is due, the slow path on the line): within a tenth.
    expect(Math.abs(fast.events.length - slow.events.length)).toBeLessThanOrEqual(Math.ceil(slow.events.length / 10));
    expect(fast.events.length).toBeLessThanOrEqual(2 * 52);
  });

  it('another fault inside the flood is its own event at once, never folded into it', () => {
    const lines = xidFlood({ lines: 40_000, startMs: START, spacingMs: 30 });
    const at = START + 25_000 * 30;
    const stamp = new Date(at).toISOString().replace('Z', '000+0000');
    lines.splice(
      25_000,
      0,
      `${stamp} gpu-node-07 kernel: NVRM: Xid (PCI:0000:01:00): 48, pid=7100, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.`,
    );
    const { events } = parse(lines, START + HOUR);
    const dbe = events.filter((e) => e.data.xid === 48);
    expect(dbe).toHaveLength(1);
    expect(dbe[0]!.data).toMatchObject({ gpu: 0, count: 1 });
    expect(events.filter((e) => e.data.xid === 95).reduce((n, e) => n + (e.data.count ?? 1), 0)).toBe(40_000);
  });

  it('an episode ends after ten quiet minutes: the fault coming back is told at once, as a new fault', () => {
    const flood = xidFlood({ lines: 20_000, startMs: START, spacingMs: 60, buses: ['0000:01:00'] });
    const later = xidFlood({ lines: 1, startMs: START + 20_000 * 60 + 11 * 60_000, spacingMs: 1, buses: ['0000:01:00'] });
    const { events } = parse([...flood, ...later], START + HOUR);
    const back = events.at(-1)!;
    expect(back.ts).toBe(new Date(START + 20_000 * 60 + 11 * 60_000).toISOString());
    expect(back.data.count).toBe(1);
    expect(back.data.episode).toBeUndefined();
    // The flood before it was counted whole, and told before it.
    expect(events.slice(0, -1).reduce((n, e) => n + (e.data.count ?? 1), 0)).toBe(20_000);
  });

  it('a live collector hears the count within a minute of the flood stopping (tick by the wall clock)', () => {
    const parser = new KernelLogParser({ catalog: shippedCatalog(), gpuIndexByPci: GPUS });
    // 20 min 40 s of lines: the last minute's count is still open when it stops.
    const lines = xidFlood({ lines: 31_000, startMs: START, spacingMs: 40, buses: ['0000:01:00'] });
    const events: ParsedKernelEvent[] = [];
    lines.forEach((line, i) => events.push(...parser.push(line, START + i * 40 + 5, i)));
    const end = START + 31_000 * 40;
    events.push(...parser.tick(end + 1_000));
    const told = () => events.reduce((n, e) => n + (e.data.count ?? 1), 0);
    expect(told()).toBeLessThan(31_000); // the last minute's count waits for its flush
    expect(parser.resumePosition()).toBeDefined(); // and a restart would read it again
    events.push(...parser.tick(end + 60_000));
    expect(told()).toBe(31_000);
    expect(parser.resumePosition()).toBeUndefined();
  });
});
