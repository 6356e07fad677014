import { readdirSync, readFileSync } from 'node:fs';
import { newEnvelope, parseEnvelope } from '@gpualert/schema';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KernelLogParser } from './kernel-log-parser.ts';
import { shippedCatalog } from '@gpualert/test-support';

/** Cases per property: modest in CI; GPUALERT_FUZZ_RUNS asks for more (run once by hand, see the issue note). */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 300);
const catalog = shippedCatalog();
const ARRIVAL = Date.parse('2026-11-30T00:00:00Z');
const fixtureLines = readdirLines([
  'dmesg-xid.log',
  'dmesg-pcie-aer.log',
  'dmesg-ecc-rowremap.log',
  'dmesg-nvlink-nvswitch.log',
  'dmesg-oom.log',
  'dmesg-thermal.log',
  'dmesg-gsp-xid119-incident.log',
  'kmsg-raw.log',
  'timestamp-prefixes.txt',
  'dmesg-gpu-fallen-off-bus.log',
]);

function readdirLines(names: readonly string[]): string[] {
  // the host-fault fixtures and the wild corpus too: every prefix shape and message issue 23 added
  const more = ['host', 'wild'].flatMap((dir) =>
    readdirSync(new URL(`../../../test/fixtures/kernel/${dir}/`, import.meta.url))
      .filter((f) => f.endsWith('.log'))
      .map((f) => `${dir}/${f}`),
  );
  return [...names, ...more]
    .flatMap((name) => readFileSync(new URL(`../../../test/fixtures/kernel/${name}`, import.meta.url), 'utf8').split('\n'))
    .filter((l) => l.trim() !== '');
}

/** What a broken driver, a hostile process name or a corrupted log puts into a token. */
const hostileToken = fc.oneof(
  fc.constantFrom('constructor', '__proto__', 'toString', 'hasOwnProperty', '', ' ', '\u0000', '\u202e', '🔥', 'NaN', 'Infinity', '-1'),
  fc.constantFrom('99999999999999999999999', '1e308', '0x7fffffff', '4294967296', '00000000:FF:1F.7', 'PCI:ffff:ff:ff', '0000:zz:00.0'),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.string({ minLength: 1_000, maxLength: 5_000 }),
  fc.nat().map(String),
);

/** A fixture line with some of its tokens (numbers, addresses, quoted names) replaced. */
const mutatedLine = fc
  .record({
    line: fc.constantFrom(...fixtureLines),
    picks: fc.array(fc.tuple(fc.nat({ max: 40 }), hostileToken), { maxLength: 4 }),
  })
  .map(({ line, picks }) => {
    const tokens = line.split(/(\s+|[,():'=])/);
    for (const [at, token] of picks) if (tokens.length > 0) tokens[at % tokens.length] = token;
    return tokens.join('');
  });

/** The same lines inside the container wrappers and the journal's JSON, which are taken apart again. */
const wrappedLine = fc
  .tuple(mutatedLine, fc.nat({ max: 3 }))
  .map(([line, how]) =>
    how === 0
      ? JSON.stringify({ log: `${line}\n`, stream: 'stdout', time: '2026-11-30T00:00:00Z' })
      : how === 1
        ? JSON.stringify({ MESSAGE: line, __REALTIME_TIMESTAMP: '1796000000000000' })
        : how === 2
          ? `2026-11-30T00:00:00.000000001Z stdout P ${line}`
          : `2026-11-30T00:00:00Z stderr F ${line}`,
  );

const anyLine = fc.oneof(
  mutatedLine,
  wrappedLine,
  fc.string({ maxLength: 300 }),
  // Long runs of what the parser's patterns look for: where a backtracking pattern would stall.
  fc
    .tuple(fc.constantFrom('NVRM: Xid (PCI:', '[ 1.0] ', 'pcieport ', '0000:', ' ', 'NVRM: ', '[', '6,1,2,-;'), fc.integer({ min: 1, max: 4_000 }))
    .map(([s, n]) => s.repeat(n)),
);

describe('kernel lines into the parser (property)', () => {
  it('never throws, makes only events the engine accepts, in bounded time, and leaves Object.prototype alone', () => {
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
    let events = 0;
    let slowest = 0;
    fc.assert(
      fc.property(fc.array(anyLine, { minLength: 1, maxLength: 20 }), fc.boolean(), (lines, withInventory) => {
        const gpuIndexByPci = withInventory
          ? new Map([
              ['0000:3b:00', 0],
              ['__proto__', 1],
              ['constructor', 2],
            ])
          : undefined;
        const parser = new KernelLogParser({ catalog, referenceYear: 2026, bootTimeMs: ARRIVAL - 3_600_000, ...(gpuIndexByPci ? { gpuIndexByPci } : {}) });
        const started = performance.now();
        const out = [];
        for (const [i, line] of lines.entries()) out.push(...parser.push(line, ARRIVAL + i, i));
        out.push(...parser.tick(ARRIVAL + 10_000), ...parser.flush());
        slowest = Math.max(slowest, performance.now() - started);
        for (const event of out) {
          const envelope = newEnvelope({ type: 'kernel.event', host: 'h', source: 'kernel/property', ts: event.ts, data: event.data });
          const parsed = parseEnvelope(JSON.stringify(envelope));
          expect(parsed.ok, parsed.ok ? '' : `${parsed.error.message}\nfrom ${JSON.stringify(lines).slice(0, 2_000)}`).toBe(true);
        }
        events += out.length;
        expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys);
      }),
      { numRuns: RUNS },
    );
    // Twenty lines of up to a few hundred KB each: linear patterns take milliseconds, a backtracking one seconds.
    expect(slowest).toBeLessThan(2_000);
    expect(events).toBeGreaterThan(0);
    console.log(`[fuzz] kernel lines: ${RUNS} logs, ${events} events, slowest log ${slowest.toFixed(1)} ms`);
  }, 120_000);
});

describe('kernel lines the property found', () => {
  const parse = (line: string) => {
    const parser = new KernelLogParser({ catalog, referenceYear: 2026, bootTimeMs: ARRIVAL - 3_600_000 });
    return [...parser.push(line, ARRIVAL, 0), ...parser.flush()];
  };

  it('dates a line whose uptime prefix is millennia long by its arrival, rather than throwing or writing year 10000', () => {
    for (const uptime of ['251606314254.197860', '99999999999999.000000']) {
      const [event] = parse(`[${uptime}] NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.`);
      expect(event!.ts).toBe(new Date(ARRIVAL).toISOString());
      expect(event!.data.xid).toBe(79);
    }
  });

  it('leaves out a pid no kernel writes (23 digits) and keeps the event valid', () => {
    const [event] = parse('[  416.096726] NVRM: Xid (PCI:0000:01:00): 62, pid=99999999999999999999999, 0c83(1870) 00000000 00000000');
    expect(event!.data).toMatchObject({ kind: 'xid', xid: 62 });
    expect(event!.data.pid).toBeUndefined();
    expect(parseEnvelope(JSON.stringify(newEnvelope({ type: 'kernel.event', host: 'h', source: 't', ts: event!.ts, data: event!.data }))).ok).toBe(true);
  });
});
