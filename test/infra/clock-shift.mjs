/**
 * Shifts a scope's `Date` by `offset` ms, once; no side effect on import (test/infra/clock-ahead.mjs
 * applies it to node processes, test/console-browser.ts sends it to each page as source, so it is
 * self-contained).
 *
 * `Date.now()`, `new Date()` and `Date()` read the shifted clock; a Date built from a given time
 * stays that time. `Date.now` stays an ordinary writable property (a test may spy on or replace it),
 * `instanceof Date`, `Date.name`, `Date.length` and `new date.constructor()` behave as before.
 * Timers, `performance.now()` and the monotonic clock are untouched. Not shifted: what reads the
 * clock natively (`Intl.DateTimeFormat().format()` with no date, TLS certificate checks).
 */
export function shiftClock(scope, offset) {
  if (offset === 0 || scope.__gpualertClockAhead !== undefined) return;
  const RealDate = scope.Date;
  const realNow = RealDate.now.bind(RealDate);
  const shifted = () => realNow() + offset;
  scope.__gpualertClockAhead = offset;
  RealDate.now = function now() {
    return shifted();
  };
  const ShiftedDate = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [shifted()] : args, newTarget === ShiftedDate ? target : newTarget);
    },
    apply() {
      return new RealDate(shifted()).toString();
    },
  });
  Object.defineProperty(RealDate.prototype, 'constructor', { value: ShiftedDate, writable: true, configurable: true, enumerable: false });
  scope.Date = ShiftedDate;
}
