/**
 * Moves this process's wall clock `GPUALERT_CLOCK_OFFSET_MS` ahead (preloaded with
 * `node --import`, so every node process a test starts inherits it through NODE_OPTIONS; the
 * browser tests put `shiftClock` into each page).
 *
 * `Date.now()`, `new Date()` and `Date()` read the shifted clock; a Date built from a given time
 * stays that time, and `instanceof Date` holds for every Date. Timers, `performance.now()` and the
 * monotonic clock are untouched, so waits last as long as they say. A test that only passes before
 * a given day (a fixture whose silence, certificate or window has an absolute end) fails here
 * today, not on that day. Plain JavaScript: node loads it before any loader is registered.
 */

/** Self-contained (it is also sent to browsers as source): shifts `scope.Date` by `offset` ms, once. */
export function shiftClock(scope, offset) {
  if (offset === 0 || scope.__gpualertClockAhead !== undefined) return;
  const RealDate = scope.Date;
  const realNow = RealDate.now.bind(RealDate);
  const now = () => realNow() + offset;
  scope.__gpualertClockAhead = offset;
  scope.Date = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget);
    },
    apply() {
      return new RealDate(now()).toString();
    },
    get(target, property, receiver) {
      return property === 'now' ? now : Reflect.get(target, property, receiver);
    },
  });
}

/** The offset this run asked for (0 when none). */
export function clockOffsetMs() {
  const offset = Number(process.env.GPUALERT_CLOCK_OFFSET_MS ?? '0');
  if (!Number.isSafeInteger(offset)) throw new Error(`GPUALERT_CLOCK_OFFSET_MS: expected whole milliseconds, got ${process.env.GPUALERT_CLOCK_OFFSET_MS}`);
  return offset;
}

shiftClock(globalThis, clockOffsetMs());
