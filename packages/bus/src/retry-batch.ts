/**
 * Runs one batch until it succeeds or the member no longer owns it. A handler that throws is a bug
 * or an infrastructure failure, never a reason to skip messages: the batch is retried with backoff
 * and its offsets stay uncommitted meanwhile.
 */
export async function retryBatch(
  run: () => Promise<void>,
  stillOwned: () => boolean,
  onError: (error: unknown, attempt: number) => void,
): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await run();
      return true;
    } catch (error) {
      onError(error, attempt);
      if (!stillOwned()) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 50 * 2 ** Math.min(attempt, 7))));
      if (!stillOwned()) return false;
    }
  }
}
