/** The fault lane's work runs before the rest: an Xid must not wait behind queued samples. */
export type Lane = 'fault' | 'bulk';

/**
 * One piece of work at a time, like a serial queue, but work queued on the fault lane goes ahead
 * of bulk work that has not started yet (a started piece always finishes first). Within a lane,
 * work runs in the order it came, so each lane keeps its hosts' order.
 */
export function laneQueue(): { run<T>(lane: Lane, work: () => Promise<T>): Promise<T>; idle(): Promise<void> } {
  const waiting: Record<Lane, (() => void)[]> = { fault: [], bulk: [] };
  let busy = false;
  let drained: (() => void)[] = [];
  const next = () => {
    const start = waiting.fault.shift() ?? waiting.bulk.shift();
    if (start) {
      busy = true;
      start();
      return;
    }
    busy = false;
    const idle = drained;
    drained = [];
    for (const resolve of idle) resolve();
  };
  return {
    run<T>(lane: Lane, work: () => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        waiting[lane].push(() => {
          // A microtask later, so work that throws at once still settles through the promise.
          void Promise.resolve().then(work).then(resolve, reject).finally(next);
        });
        if (!busy) next();
      });
    },
    idle() {
      return busy ? new Promise<void>((resolve) => drained.push(resolve)) : Promise.resolve();
    },
  };
}
