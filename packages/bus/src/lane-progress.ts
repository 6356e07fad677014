/** How often a batch waiting for its consumer's other lane says it is alive: well inside any session timeout. */
export const CAUGHT_UP_BEAT_MS = 1_000;

/**
 * The longest a batch waits for its consumer's other lane: then it goes on, not known to be caught
 * up. Its fetch's other batches (other faults) wait with it, so the wait is bounded like a step.
 */
export const MAX_CAUGHT_UP_WAIT_MS = 30_000;

interface Waiter {
  readonly key: string;
  readonly end: number;
  readonly resolve: (reached: boolean) => void;
}

/**
 * How far a consumer's lanes have handled each partition (`topic/partition` → the next offset),
 * and the batches waiting for another lane to get somewhere (`BatchContext.caughtUp`). A
 * rebalance, a lane leaving or a stop lets every waiter go (`release`): what it waited for may now
 * be another member's, or never come. `epoch` counts the releases, so that a wait that began
 * before one (its questions to Kafka still out) does not start after it.
 */
export class LaneProgress {
  private readonly next = new Map<string, number>();
  private readonly waiters = new Set<Waiter>();
  private releases = 0;

  /** How many releases so far: a wait that saw a release since it began gives up. */
  get epoch(): number {
    return this.releases;
  }

  /** A batch of `key` handled up to `next` (exclusive). */
  handled(key: string, next: number): void {
    if (next <= (this.next.get(key) ?? -1)) return;
    this.next.set(key, next);
    for (const waiter of this.waiters) {
      if (waiter.key === key && next >= waiter.end) {
        this.waiters.delete(waiter);
        waiter.resolve(true);
      }
    }
  }

  /** Where `key` has been handled up to, if a lane of this consumer handled a batch of it since the last release. */
  handledUpTo(key: string): number | undefined {
    return this.next.get(key);
  }

  /**
   * Resolves to true once `key` is handled up to `end` (counting from `from` where no batch of it
   * has been handled since the last release); to false at a release, should `keepAlive` fail (the
   * group is rebalancing: this member must rejoin), after `maxWaitMs`, or at once should a release
   * have come since `epoch`. `keepAlive` runs every CAUGHT_UP_BEAT_MS meanwhile.
   */
  async until(key: string, end: number, from: number, epoch: number, keepAlive: () => Promise<void>, maxWaitMs = MAX_CAUGHT_UP_WAIT_MS): Promise<boolean> {
    if (epoch !== this.releases) return false;
    if ((this.next.get(key) ?? from) >= end) return true;
    let waiter: Waiter | undefined;
    const done = new Promise<boolean>((resolve) => {
      waiter = { key, end, resolve };
      this.waiters.add(waiter);
    });
    const give = (reached: boolean) => {
      if (waiter && this.waiters.delete(waiter)) waiter.resolve(reached);
    };
    const beat = setInterval(() => void keepAlive().catch(() => give(false)), CAUGHT_UP_BEAT_MS);
    const limit = setTimeout(() => give(false), maxWaitMs);
    try {
      return await done;
    } finally {
      clearInterval(beat);
      clearTimeout(limit);
    }
  }

  /** A rebalance, a lane gone or a stop: every waiter goes on, and what was handled counts again from the group's commits. */
  release(): void {
    this.releases += 1;
    this.next.clear();
    for (const waiter of this.waiters) waiter.resolve(false);
    this.waiters.clear();
  }
}
