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
