/**
 * Moves this process's wall clock `GPUALERT_CLOCK_OFFSET_MS` ahead, preloaded with `node --import`
 * so every node process a test starts inherits it through NODE_OPTIONS (tools/test-clock-ahead.ts).
 * A test that only passes before a given day (a fixture whose silence, certificate or window has an
 * absolute end) fails there today, not on that day. Plain JavaScript: node loads it before any
 * loader is registered.
 */
import { shiftClock } from './clock-shift.mjs';

/** The offset this run asked for (0 when none). */
export function clockOffsetMs() {
  const offset = Number(process.env.GPUALERT_CLOCK_OFFSET_MS ?? '0');
  if (!Number.isSafeInteger(offset)) throw new Error(`GPUALERT_CLOCK_OFFSET_MS: expected whole milliseconds, got ${process.env.GPUALERT_CLOCK_OFFSET_MS}`);
  return offset;
}

shiftClock(globalThis, clockOffsetMs());
