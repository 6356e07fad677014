import { describe, expect, it } from 'vitest';
import { KernelLogParser } from './kernel-log-parser.ts';
import { parseKernelLog } from './parse-kernel-log.ts';
import { stripPrefix } from './strip-prefix.ts';
import { shippedCatalog } from '@gpualert/test-support';

const catalog = shippedCatalog();
const ARRIVAL = Date.parse('2026-11-30T00:00:00Z');

// One real message (NVIDIA/gpu-operator#1146) under every output shape an operator pastes. The
// shapes are built from each tool's documented format (synthetic prefixes around a real message).
const MESSAGE = 'NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)';

const SHAPES: readonly (readonly [string, string, { wall?: string; uptime?: number; delta?: number }])[] = [
  ['bare kernel: (dmesg -t through a logger)', `kernel: ${MESSAGE}`, {}],
  ['journalctl -o cat / dmesg -t', MESSAGE, {}],
  ['journalctl --no-hostname', `Dec  2 11:49:53 kernel: ${MESSAGE}`, { wall: '2026-12-02T11:49:53.000Z' }],
  ['journalctl -o short (syslog)', `Dec  2 11:49:53 worker4 kernel: ${MESSAGE}`, { wall: '2026-12-02T11:49:53.000Z' }],
  [
    'syslog with the uptime after kernel:',
    `Dec  2 11:49:53 worker4 kernel: [  885.242168] ${MESSAGE}`,
    { wall: '2026-12-02T11:49:53.000Z', uptime: 885.242168 },
  ],
  ['journalctl -o short-precise', `Dec 02 11:49:53.242168 worker4 kernel: ${MESSAGE}`, { wall: '2026-12-02T11:49:53.242Z' }],
  ['journalctl -o short-iso', `2025-12-02T11:49:53+0100 worker4 kernel: ${MESSAGE}`, { wall: '2025-12-02T10:49:53.000Z' }],
  ['journalctl -o short-iso-precise', `2025-12-02T11:49:53.242168+01:00 worker4 kernel: ${MESSAGE}`, { wall: '2025-12-02T10:49:53.242Z' }],
  ['journalctl -o short-full', `Tue 2025-12-02 11:49:53 UTC worker4 kernel: ${MESSAGE}`, { wall: '2025-12-02T11:49:53.000Z' }],
  ['journalctl -o short-monotonic', `[  885.242168] worker4 kernel: ${MESSAGE}`, { uptime: 885.242168 }],
  ['journalctl -o short-unix', `1764676193.242168 worker4 kernel: ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z' }],
  ['rsyslog file format', `2025-12-02T11:49:53.242168+00:00 worker4 kernel: ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z' }],
  ['RFC 3164 with a priority', `<3>Dec  2 11:49:53 worker4 kernel: ${MESSAGE}`, { wall: '2026-12-02T11:49:53.000Z' }],
  ['RFC 5424', `<3>1 2025-12-02T11:49:53.242Z worker4 kernel - - - ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z' }],
  [
    'RFC 5424 with structured data',
    `<3>1 2025-12-02T11:49:53.242Z worker4 kernel - - [meta seq="1" x="a\\]b"] ${MESSAGE}`,
    { wall: '2025-12-02T11:49:53.242Z' },
  ],
  ['dmesg', `[  885.242168] ${MESSAGE}`, { uptime: 885.242168 }],
  ['dmesg -r', `<3>[  885.242168] ${MESSAGE}`, { uptime: 885.242168 }],
  ['dmesg -x', `kern  :err   : [  885.242168] ${MESSAGE}`, { uptime: 885.242168 }],
  ['dmesg -T (--time-format ctime)', `[Tue Dec  2 11:49:53 2025] ${MESSAGE}`, { wall: '2025-12-02T11:49:53.000Z' }],
  ['dmesg --time-format iso', `2025-12-02T11:49:53,242168+00:00 ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z' }],
  ['dmesg -x --time-format iso', `kern  :err   : 2025-12-02T11:49:53,242168+00:00 ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z' }],
  ['dmesg -H / --time-format reltime, the minute line', `[Dec02 11:49] ${MESSAGE}`, { wall: '2026-12-02T11:49:00.000Z' }],
  ['dmesg -H, the minute line as some versions print it', `[Dec 2 11:49] ${MESSAGE}`, { wall: '2026-12-02T11:49:00.000Z' }],
  ['dmesg -H / --time-format reltime, a delta line', `[  +0.000289] ${MESSAGE}`, { delta: 0.000289 }],
  ['dmesg --time-format delta', `[<    0.000289>] ${MESSAGE}`, { delta: 0.000289 }],
  ['dmesg -d (show-delta)', `[  885.242168 <    0.000289>] ${MESSAGE}`, { uptime: 885.242168 }],
  ['dmesg -T -d', `[Tue Dec  2 11:49:53 2025 <    0.000289>] ${MESSAGE}`, { wall: '2025-12-02T11:49:53.000Z' }],
  ['dmesg with a caller id', `[  885.242168] [ T1946] ${MESSAGE}`, { uptime: 885.242168 }],
  ['a serial console logger', `[2025-12-02 11:49:53.242168][  885.242168] ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z', uptime: 885.242168 }],
  ['CRI (containerd/CRI-O) full line', `2025-12-02T11:49:53.242168901Z stdout F ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z' }],
  ['CRI around a dmesg line', `2025-12-02T11:49:53.242168901Z stdout F [  885.242168] ${MESSAGE}`, { wall: '2025-12-02T11:49:53.242Z', uptime: 885.242168 }],
  [
    'CRI around a journal line: the inner time wins',
    `2025-12-02T12:00:00Z stderr F Dec  2 11:49:53 worker4 kernel: ${MESSAGE}`,
    { wall: '2026-12-02T11:49:53.000Z' },
  ],
  ['Docker json-file', JSON.stringify({ log: `${MESSAGE}\n`, stream: 'stdout', time: '2025-12-02T11:49:53.242168901Z' }), { wall: '2025-12-02T11:49:53.242Z' }],
  [
    'journalctl -o json',
    JSON.stringify({
      __REALTIME_TIMESTAMP: '1764676193242168',
      __MONOTONIC_TIMESTAMP: '885242168',
      _TRANSPORT: 'kernel',
      SYSLOG_IDENTIFIER: 'kernel',
      MESSAGE,
      _HOSTNAME: 'worker4',
    }),
    { wall: '2025-12-02T11:49:53.242Z', uptime: 885.242168 },
  ],
  ['a pasted block indented four spaces', `    [  885.242168] ${MESSAGE}`, { uptime: 885.242168 }],
  ['with terminal colours', `\x1b[32m[  885.242168] \x1b[0m${MESSAGE}`, { uptime: 885.242168 }],
];

describe('every prefix shape operators paste', () => {
  it.each(SHAPES)('%s', (_name, raw, expected) => {
    const line = stripPrefix(raw, 2026);
    expect(line.message).toBe(MESSAGE);
    expect(line.continuation).toBe(false);
    expect(line.wallMs === undefined ? undefined : new Date(line.wallMs).toISOString()).toBe(expected.wall);
    expect(line.uptimeS).toBe(expected.uptime);
    expect(line.deltaS).toBe(expected.delta);
  });

  it("every shape gives the GPU's failed start, with its address", () => {
    for (const [name, raw] of SHAPES) {
      const { events } = parseKernelLog(raw, { catalog, referenceYear: 2026 }, ARRIVAL);
      expect(
        events.map((e) => [e.data.kind, e.data.pci_bus, e.data.severity]),
        name,
      ).toEqual([['other_gpu', '0000:0a:00', 'error']]);
    }
  });

  it('a journal JSON message of bytes (not UTF-8 text) is read; other JSON is left as it is', () => {
    const bytes = [...Buffer.from(MESSAGE)];
    expect(stripPrefix(JSON.stringify({ MESSAGE: bytes, __REALTIME_TIMESTAMP: '1764676193242168' }), 2026).message).toBe(MESSAGE);
    const other = '{"level":"info","msg":"starting"}';
    expect(stripPrefix(other, 2026)).toEqual({ message: other, continuation: false });
    expect(stripPrefix('{not json', 2026).message).toBe('{not json');
  });

  it('a real continuation line stays one (it starts with white space and no stamp)', () => {
    expect(stripPrefix('            NVRM: nouveau, rivafb, nvidiafb or rivatv ', 2026)).toMatchObject({ continuation: true });
  });
});

describe('container partial lines', () => {
  it('CRI P fragments are joined to the F line that completes them, dated by the first', () => {
    const log = [
      '2025-12-02T11:49:53.000000001Z stdout P NVRM: GPU 0000:0a:00.0: RmInit',
      '2025-12-02T11:49:53.000000002Z stdout P Adapter failed! ',
      '2025-12-02T11:49:54.000000003Z stdout F (0x24:0x72:1568)',
    ].join('\n');
    const { events, stats } = parseKernelLog(log, { catalog }, ARRIVAL);
    expect(events.map((e) => [e.ts, e.data.message, e.position])).toEqual([['2025-12-02T11:49:53.000Z', MESSAGE, 0]]);
    expect(stats.lines).toBe(3);
  });

  it('Docker lines without their newline are partial too; a fragment with no end is still read at the end', () => {
    const parts = [`${MESSAGE.slice(0, 20)}`, `${MESSAGE.slice(20)}\n`].map((log) => JSON.stringify({ log, stream: 'stdout', time: '2025-12-02T11:49:53Z' }));
    expect(parseKernelLog(parts.join('\n'), { catalog }, ARRIVAL).events.map((e) => e.data.message)).toEqual([MESSAGE]);
    expect(parseKernelLog(parts[0]!, { catalog }, ARRIVAL).events).toHaveLength(0); // "NVRM: GPU 0000:0a:00" alone is nothing
    const unfinished = JSON.stringify({ log: MESSAGE, stream: 'stdout', time: '2025-12-02T11:49:53Z' });
    expect(parseKernelLog(unfinished, { catalog }, ARRIVAL).events.map((e) => e.data.message)).toEqual([MESSAGE]);
  });
});

describe('dates', () => {
  it('dmesg -H: the minute line anchors the delta lines after it (real lines, linux-raid list)', () => {
    // From Oleksandr Shchirskyi's dmesg in a linux-raid thread on md126 (verbatim, as indexed), with a GPU line
    // of the same shape appended (synthetic) so the delta chain dates an event.
    const log = [
      '[Mar16 11:46] md/raid:md126: device nvme0n1 operational as raid disk 0',
      '[  +0.011147] md/raid:md126: raid level 4 active with 1 out of 2 devices, a=',
      '[  +0.044605] md/raid0:md126: raid5 must have missing parity disk!',
      '[  +0.000002] md: md126: raid0 would not accept array',
      `[  +1.500000] ${MESSAGE}`,
    ].join('\n');
    const { events } = parseKernelLog(log, { catalog, referenceYear: 2026 }, ARRIVAL);
    expect(events.map((e) => e.ts)).toEqual(['2026-03-16T11:46:01.555Z']);
  });

  it('deltas with no minute line before them are dated by arrival, never later', () => {
    const { events } = parseKernelLog(`[  +5.000000] ${MESSAGE}`, { catalog }, ARRIVAL);
    expect(events.map((e) => e.ts)).toEqual([new Date(ARRIVAL).toISOString()]);
  });

  it('an uptime beyond this boot (a log from an earlier boot) is dated by arrival, not in the future', () => {
    const bootTimeMs = ARRIVAL - 1_000_000; // up for 1000 s
    const within = parseKernelLog(`[  885.242168] ${MESSAGE}`, { catalog, bootTimeMs }, ARRIVAL).events;
    expect(within.map((e) => e.ts)).toEqual([new Date(bootTimeMs + 885_242.168).toISOString()]);
    // the bug: 5975153 s of uptime on a host up for 1000 s was dated 69 days ahead
    const beyond = parseKernelLog(`[5975153.878190] ${MESSAGE}`, { catalog, bootTimeMs }, ARRIVAL).events;
    expect(beyond.map((e) => e.ts)).toEqual([new Date(ARRIVAL).toISOString()]);
  });

  it("a parser that runs through New Year reads January's syslog dates in the new year", () => {
    const parser = new KernelLogParser({ catalog });
    const before = parser.push(`Dec 31 23:59:00 worker4 kernel: ${MESSAGE}`, Date.parse('2026-12-31T23:59:01Z'));
    const after = parser.push(`Jan  1 00:01:00 worker4 kernel: ${MESSAGE}`, Date.parse('2027-01-01T00:01:01Z'));
    expect([...before, ...after, ...parser.flush()].map((e) => e.ts)).toEqual(['2026-12-31T23:59:00.000Z', '2027-01-01T00:01:00.000Z']);
  });

  it("a syslog date with no year that would land in the future is last year's", () => {
    const january = Date.parse('2027-01-02T00:00:00Z');
    const { events } = parseKernelLog(`Dec 31 23:59:00 worker4 kernel: ${MESSAGE}`, { catalog }, january);
    expect(events.map((e) => e.ts)).toEqual(['2026-12-31T23:59:00.000Z']);
  });
});
