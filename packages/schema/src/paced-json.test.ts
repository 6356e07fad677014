import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringifyPaced } from './paced-json.ts';

describe('stringifyPaced', () => {
  it('writes the text JSON.stringify writes, for any JSON value and for the values it leaves out or turns to null', async () => {
    const odd = fc.constantFrom(undefined, () => 1, Symbol('s'), new Date(0), Object.assign(Object.create(null) as object, { a: 1 }), {
      toJSON: () => 'as json',
    });
    const value = fc.letrec((tie) => ({
      any: fc.oneof({ depthSize: 'small' }, fc.jsonValue(), odd, tie('array'), tie('object')),
      array: fc.array(tie('any'), { maxLength: 80 }),
      object: fc.dictionary(fc.string(), tie('any'), { maxKeys: 6 }),
    })).any;
    await fc.assert(
      fc.asyncProperty(value, async (v) => {
        expect(await stringifyPaced(v, -1)).toBe(JSON.stringify(v));
      }),
      { numRuns: 300 },
    );
  });

  it('gives the event loop turns while it writes a long list (a storm notification of 20,000 alerts)', async () => {
    const alerts = Array.from({ length: 20_000 }, (_, i) => ({ fingerprint: `fp${i}`, labels: { host: `gpu-node-${i}` }, evidence: [] }));
    const notification = { id: 'n', alerts, alertmanager: { receiver: 'hook', alerts } };
    /** Turns of the event loop while `work` runs, counted by a callback that queues itself again at each. */
    const turnsDuring = async (work: () => unknown) => {
      let turns = 0;
      let running = true;
      const tick = () => {
        if (!running) return;
        turns += 1;
        setImmediate(tick);
      };
      setImmediate(tick);
      await work();
      running = false;
      return turns;
    };
    let text = '';
    expect(await turnsDuring(async () => (text = await stringifyPaced(notification, -1)))).toBeGreaterThan(1_000);
    expect(text).toBe(JSON.stringify(notification));
    // One JSON.stringify gives none: the count above is the pacing's.
    expect(await turnsDuring(() => JSON.stringify(notification))).toBe(0);
  });
});
