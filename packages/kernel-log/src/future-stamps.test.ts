import { describe, expect, it } from 'vitest';
import { FUTURE_SLACK_MS, KernelLogParser } from './kernel-log-parser.ts';
import { parseKernelLog } from './parse-kernel-log.ts';
import { shippedCatalog } from '@gpualert/test-support';

const catalog = shippedCatalog();
const ARRIVAL = Date.parse('2026-11-30T00:00:00Z');
const XID79 = 'NVRM: Xid (PCI:0000:3a:00): 79, pid=1, GPU has fallen off the bus.';

// Synthetic lines (after the attack's kern-dates.log): the same Xid 79 under every prefix that
// writes its own year, dated 2099 or 9999 — a host clock set ahead, or a hostile stamp.
const FUTURE: [line: string, claimed: string][] = [
  [`<4>1 2099-01-01T00:00:00Z gpu-node-07 kernel - - - ${XID79}`, '2099-01-01T00:00:00.000Z'],
  [`9999-12-31T23:59:59.000000+00:00 gpu-node-07 kernel: ${XID79}`, '9999-12-31T23:59:59.000Z'],
  [`[Mon Dec 31 23:59:59 2099] ${XID79}`, '2099-12-31T23:59:59.000Z'],
  [JSON.stringify({ __REALTIME_TIMESTAMP: '4102444800000000', _TRANSPORT: 'kernel', MESSAGE: XID79 }), '2100-01-01T00:00:00.000Z'],
  // past what ISO-8601 (and Date) can write: kept as a number
  [JSON.stringify({ __REALTIME_TIMESTAMP: '99999999999999999999', _TRANSPORT: 'kernel', MESSAGE: XID79 }), '100000000000000000 ms since the epoch'],
  [`4102444800.000000 gpu-node-07 kernel: ${XID79}`, '2100-01-01T00:00:00.000Z'],
];

describe('a line stamped after it arrived', () => {
  it.each(FUTURE)('%s: dated by its arrival, what it claimed kept', (line, claimed) => {
    const parser = new KernelLogParser({ catalog, referenceYear: 2026 });
    const events = [...parser.push(line, ARRIVAL), ...parser.flush()];
    expect(events.map((e) => [e.ts, e.data.xid])).toEqual([[new Date(ARRIVAL).toISOString(), 79]]);
    expect(events[0]!.claimedTs).toBe(claimed);
    expect(events[0]!.data.details).toEqual([`gpualert: the line's own time ${claimed} is after it arrived; dated by its arrival`]);
    expect(parser.stats.futureDated).toBe(1);
  });

  it('the lines after a future-dated one that carry no time of their own follow it to its arrival, not to 2099', () => {
    const { events } = parseKernelLog([FUTURE[0]![0], `[  +0.500000] NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE`].join('\n'), { catalog }, ARRIVAL);
    expect(events.map((e) => e.ts)).toEqual([new Date(ARRIVAL).toISOString(), new Date(ARRIVAL).toISOString()]);
  });

  it(`a stamp up to ${FUTURE_SLACK_MS / 60_000} minutes ahead (clocks drift) is believed; one beyond is not`, () => {
    const at = (ms: number) => parseKernelLog(`${new Date(ms).toISOString()} gpu-node-07 kernel: ${XID79}`, { catalog }, ARRIVAL).events[0]!;
    const within = at(ARRIVAL + FUTURE_SLACK_MS);
    expect([within.ts, within.claimedTs, within.data.details]).toEqual([new Date(ARRIVAL + FUTURE_SLACK_MS).toISOString(), undefined, undefined]);
    const beyond = at(ARRIVAL + FUTURE_SLACK_MS + 1_000);
    expect([beyond.ts, beyond.claimedTs]).toEqual([new Date(ARRIVAL).toISOString(), new Date(ARRIVAL + FUTURE_SLACK_MS + 1_000).toISOString()]);
  });
});

describe('an old log read offline', () => {
  it("keeps every line's own date, however old, under every prefix that writes a year", () => {
    const log = [
      `<4>1 2019-03-01T10:00:00Z gpu-node-07 kernel - - - ${XID79}`,
      `2020-06-01T10:00:00.000000+00:00 gpu-node-07 kernel: NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE`,
      `[Mon Jan  4 10:00:00 2021] NVRM: Xid (PCI:0000:29:00): 79, pid=1, GPU has fallen off the bus.`,
      JSON.stringify({
        __REALTIME_TIMESTAMP: '1640995200000000',
        _TRANSPORT: 'kernel',
        MESSAGE: 'NVRM: Xid (PCI:0000:4b:00): 79, pid=1, GPU has fallen off the bus.',
      }),
      `1672531200.000000 gpu-node-07 kernel: NVRM: Xid (PCI:0000:5c:00): 79, pid=1, GPU has fallen off the bus.`,
    ].join('\n');
    const { events, stats } = parseKernelLog(log, { catalog }, ARRIVAL);
    expect(events.map((e) => e.ts)).toEqual([
      '2019-03-01T10:00:00.000Z',
      '2020-06-01T10:00:00.000Z',
      '2021-01-04T10:00:00.000Z',
      '2022-01-01T00:00:00.000Z',
      '2023-01-01T00:00:00.000Z',
    ]);
    expect(events.every((e) => e.claimedTs === undefined && e.data.details === undefined)).toBe(true);
    expect(stats.futureDated).toBe(0);
  });
});
