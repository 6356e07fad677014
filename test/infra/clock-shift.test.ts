import { createContext, runInContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { shiftClock } from './clock-shift.mjs';

const AHEAD = 731 * 86_400_000;
/** The real clock, from a realm of its own (this process's Date is itself shifted in the clock-ahead run). */
const realNow = () => runInContext('Date.now()', createContext({})) as number;

/** A fresh realm with its own Date, shifted: the test's own clock stays as it is. */
function shifted(): (code: string) => unknown {
  const context = createContext({});
  shiftClock(runInContext('globalThis', context) as typeof globalThis, AHEAD);
  return (code) => runInContext(code, context);
}

describe("the clock-ahead run's Date", () => {
  it('reads the shifted clock where code asks for now, and the given time where it gives one', () => {
    const run = shifted();
    const before = realNow();
    for (const code of [
      'Date.now()',
      'new Date().getTime()',
      'Date.parse(Date())',
      'new (new Date(0).constructor)().getTime()',
      'new (class extends Date {})().getTime()',
    ]) {
      const at = run(code) as number;
      expect(at - before, code).toBeGreaterThanOrEqual(AHEAD - 1_000);
      expect(at - before, code).toBeLessThan(AHEAD + 60_000);
    }
    expect(run('new Date(0).getTime()')).toBe(0);
    expect(run('[new Date() instanceof Date, Date.name, Date.length, Object.prototype.toString.call(new Date())]')).toEqual([true, 'Date', 7, '[object Date]']);
  });

  it('leaves Date.now an ordinary property a test may replace, and shifts a realm once', () => {
    const run = shifted();
    expect(run('const real = Date.now; Date.now = () => 42; const mocked = Date.now(); Date.now = real; mocked')).toBe(42);
    expect(run('Object.getOwnPropertyDescriptor(Date, "now").value()') as number).toBeGreaterThan(realNow() + AHEAD - 1_000);
    const context = createContext({});
    const scope = runInContext('globalThis', context) as typeof globalThis;
    shiftClock(scope, AHEAD);
    shiftClock(scope, AHEAD);
    expect(runInContext('Date.now()', context) as number).toBeLessThan(realNow() + AHEAD + 60_000);
  });
});
