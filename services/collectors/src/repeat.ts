/**
 * Runs `work` again and again, waiting `delayAfter(elapsedMs)` between runs, until stopped;
 * `stop()` waits for the run in progress. The shape every polling collector shares.
 */
export function repeat(work: () => Promise<void>, delayAfter: (elapsedMs: number) => number): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const loop = () => {
    if (stopped) return;
    const started = Date.now();
    running = work().finally(() => {
      if (!stopped) timer = setTimeout(loop, Math.max(0, delayAfter(Date.now() - started)));
    });
  };
  loop();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
