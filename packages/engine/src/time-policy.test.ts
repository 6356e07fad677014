import { loadXidCatalog } from '@gpualert/rules';
import { syntheticFleet } from '@gpualert/test-support';
import type { Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { loadRuleSet } from './load-rules.ts';
import { replay } from './replay.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;

/** Three hosts sampled every 10 s for 20 minutes; `dated` re-dates chosen samples. */
function recording(dated: (e: Envelope, i: number) => string = (e) => e.ts): string[] {
  return [...syntheticFleet({ hosts: 3, gpusPerHost: 2, start: T0, minutes: 20, seed: 3 })].map((e, i) => JSON.stringify({ ...e, ts: dated(e, i) }));
}

const replayed = (lines: string[]) =>
  replay(new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never)), lines);
/** The hosts ever called absent. */
const absent = (lines: string[]) =>
  [
    ...new Set(
      replayed(lines)
        .filter((a) => a.data.rule === 'host-absent' && a.data.status === 'firing')
        .map((a) => a.host),
    ),
  ].sort();
/** The hosts still called absent at the end of the recording. */
const stillAbsent = (lines: string[]) => {
  const last = new Map<string, string>();
  for (const a of replayed(lines)) if (a.data.rule === 'host-absent') last.set(a.host, a.data.status);
  return [...last]
    .filter(([, status]) => status === 'firing')
    .map(([host]) => host)
    .sort();
};

describe('the event clock and a sample dated far ahead', () => {
  const midway = (e: Envelope) => e.type === 'gpu.sample' && Date.parse(e.ts) === T0 + 10 * MIN;

  it("one host whose clock says 9999 calls no other host absent: the stream's clock does not take its word", () => {
    expect(absent(recording())).toEqual([]);
    const one = recording((e) => (midway(e) && e.host.endsWith('000') ? '9999-01-01T00:00:00.000Z' : e.ts));
    expect(absent(one)).toEqual([]);
  });

  it('two hosts far ahead are the stream moving on (an outage ended): the clock follows, and the host left behind stays absent', () => {
    // What the check sees when the clock does move: every host was silent through the 3 hours; the
    // two that came back resolve, the third, still in the past, stays absent.
    const two = recording((e) =>
      Date.parse(e.ts) >= T0 + 10 * MIN && !e.host.endsWith('002') ? new Date(Date.parse(e.ts) + 3 * 3_600_000).toISOString() : e.ts,
    );
    expect(stillAbsent(two)).toEqual(['gpu-node-002']);
    expect(absent(two)).toEqual(['gpu-node-000', 'gpu-node-001', 'gpu-node-002']);
    // One host far ahead, as in the test above, leaves nobody absent at the end either.
    expect(stillAbsent(recording((e) => (midway(e) && e.host.endsWith('000') ? '9999-01-01T00:00:00.000Z' : e.ts)))).toEqual([]);
  });
});
