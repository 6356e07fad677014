import { createRequire } from 'node:module';

/** kafkajs 2.2.4's own interval for a queue held back by in-flight limits or broker throttling. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

interface RequestQueue {
  throttledUntil: number;
  pending: unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

/**
 * kafkajs 2.2.4 (its last release) re-arms a timer with a negative delay whenever its request queue
 * is empty, so every idle connection wakes the event loop about 1,500 times a second
 * (tulios/kafkajs#1556, #1704; the fix of #1667 was never released). Measured here: an idle
 * `gpualert agent` on Kafka used 1.9% of a core, 0.5% without it. This applies #1667's fix: with
 * nothing pending, nothing is scheduled (a later push schedules its own check).
 */
export function fixKafkajsIdleLoop(): void {
  const require = createRequire(import.meta.url);
  let RequestQueue: { prototype: RequestQueue & { __gpualertFixed?: boolean } };
  try {
    RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as typeof RequestQueue;
  } catch {
    return; // a kafkajs whose layout changed: it is a newer one, and the loop is its own to fix
  }
  const proto = RequestQueue.prototype;
  if (proto.__gpualertFixed || typeof proto.scheduleCheckPendingRequests !== 'function') return;
  proto.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue): void {
    if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
    const throttledFor = this.throttledUntil - Date.now();
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      throttledFor > 0 ? throttledFor : CHECK_PENDING_REQUESTS_INTERVAL_MS,
    );
  };
  proto.__gpualertFixed = true;
}
