/**
 * Runs work one piece at a time, in the order given: a consumer's batches and its timer's ticks
 * share one state without interleaving. `idle()` resolves once everything queued has run.
 */
export function serialQueue(): { run<T>(work: () => Promise<T>): Promise<T>; idle(): Promise<void> } {
  let busy: Promise<unknown> = Promise.resolve();
  return {
    run<T>(work: () => Promise<T>): Promise<T> {
      const next = busy.then(work, work);
      busy = next.catch(() => {});
      return next;
    },
    async idle() {
      await busy;
    },
  };
}

/**
 * Work run one at a time, like `serialQueue`, except that urgent work waiting goes before the rest
 * waiting (each kind in the order it came). The engine's fast lane: a kernel event's batch handed
 * over with a fetch's sample batches is judged before them, not after.
 */
export function priorityQueue(): { run<T>(work: () => Promise<T>, urgent?: boolean): Promise<T>; idle(): Promise<void> } {
  const waiting: { urgent: (() => void)[]; normal: (() => void)[] } = { urgent: [], normal: [] };
  let running = false;
  let idlers: (() => void)[] = [];
  const next = () => {
    const start = waiting.urgent.shift() ?? waiting.normal.shift();
    if (start) return start();
    running = false;
    const done = idlers;
    idlers = [];
    for (const resolve of done) resolve();
  };
  return {
    run<T>(work: () => Promise<T>, urgent = false): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const start = () => {
          running = true;
          Promise.resolve().then(work).then(resolve, reject).finally(next);
        };
        if (!running) start();
        else (urgent ? waiting.urgent : waiting.normal).push(start);
      });
    },
    idle() {
      return running ? new Promise<void>((resolve) => idlers.push(resolve)) : Promise.resolve();
    },
  };
}
