import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { hostName, syntheticFleet } from '@gpualert/test-support';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { loadRuleSet } from './load-rules.ts';
import { replay } from './replay.ts';
import { MAX_CLOCK_LEAP_MS } from './time-policy.ts';

const rules = loadRuleSet();
if (!rules.ok) throw new Error(rules.errors.map(formatRuleError).join('\n'));
const catalog = loadXidCatalog();
if (!catalog.ok) throw new Error('catalog');
const engine = () => new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;

const fleet = (minutes: number, start = T0) => [...syntheticFleet({ hosts: 4, gpusPerHost: 2, start, minutes, seed: 3 })];

/** One host's sample, moved to another time. */
function redated(envelopes: Envelope[], host: string, at: string): Envelope {
  const sample = envelopes.find((e): e is EnvelopeOf<'gpu.sample'> => e.type === 'gpu.sample' && e.host === host);
  if (!sample) throw new Error('no sample');
  return newEnvelope({ ...sample, id: `${sample.id}-redated-${at}`, ts: at });
}

const absent = (alerts: EnvelopeOf<'alert'>[]) => alerts.filter((a) => a.data.rule === 'host-absent' && a.data.status === 'firing');
const lines = (envelopes: Envelope[]) => envelopes.map((e) => JSON.stringify(e));

describe('the event clock and samples dated ahead', () => {
  it(`a sample dated 9999 is passed over with its reason: no host is called absent and the clock goes on (bound ${MAX_CLOCK_LEAP_MS / MIN} min)`, () => {
    const before = fleet(10);
    const after = fleet(20, T0 + 10 * MIN);
    const wild = redated(before, hostName(1), '9999-12-31T23:59:59Z');
    const skipped: string[] = [];
    const alerts = replay(engine(), lines([...before, wild, ...after]), undefined, { skip: (line, reason) => skipped.push(`${line}: ${reason}`) });
    expect(skipped).toEqual([`${before.length + 1}: ${skipped[0]!.split(': ').slice(1).join(': ')}`]);
    expect(skipped[0]).toMatch(
      /ts: expected at most 15 min after the stream's event clock \(2026-06-01T00:09:.*\), got 9999-12-31T23:59:59Z: the host's clock is ahead/,
    );
    expect(absent(alerts)).toEqual([]);

    // The same recording with the clock moved there: every other host is called absent, which the bound prevents.
    const host = hostName(2);
    const silent = [...before, ...after.filter((e) => e.host !== host)];
    expect([...new Set(absent(replay(engine(), lines(silent))).map((a) => a.host))]).toEqual([host]);
  });

  it('refuses the leap in --strict (no skip) at its line', () => {
    const before = fleet(3);
    expect(() => replay(engine(), lines([...before, redated(before, hostName(0), '9999-01-01T00:00:00Z')]))).toThrow(
      new RegExp(`^line ${before.length + 1}: ts: expected at most 15 min after the stream's event clock`),
    );
  });

  it('a whole stream resuming after a gap longer than the bound moves the clock: the second host agreeing is enough', () => {
    const gap = 3 * 60 * MIN;
    const before = fleet(5);
    const after = fleet(5, T0 + gap);
    const skipped: number[] = [];
    const alerts = replay(engine(), lines([...before, ...after]), undefined, { skip: (line) => skipped.push(line) });
    // Only the first sample after the gap waits for the second host's.
    expect(skipped).toEqual([before.length + after.findIndex((e) => e.type === 'gpu.sample') + 1]);
    expect(alerts.filter((a) => a.data.status === 'firing' && a.data.rule !== 'host-absent')).toEqual([]);
  });
});
