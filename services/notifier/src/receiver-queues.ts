/**
 * One queue per receiver and at most one runner draining it. What is pushed while a runner works
 * is that runner's to take; one pushed while a runner is finishing (its queue seen empty, its
 * promise not yet settled) would find it still registered and start none, so a runner that ends
 * with its queue not empty starts the next: no notification is left waiting for the next push.
 */
export class ReceiverQueues<T> {
  private readonly queues = new Map<string, T[]>();
  private readonly running = new Map<string, Promise<void>>();
  /** Receivers whose next runner starts on the next turn of the event loop. */
  private readonly restarting = new Set<string>();

  constructor(
    /** Takes from `queue` until it is empty (or the notifier stops); never rejects on purpose. */
    private readonly run: (receiver: string, queue: T[]) => Promise<void>,
    private readonly onError: (receiver: string, error: unknown) => void,
    private readonly stopped: () => boolean,
  ) {}

  /** Queues `item` unless `same` finds it there already, and makes sure a runner takes it. */
  push(receiver: string, item: T, same?: (queued: T) => boolean): void {
    const queue = this.queueOf(receiver);
    if (same && queue.some(same)) return;
    queue.push(item);
    void this.drain(receiver);
  }

  /** The runner draining `receiver`'s queue, started if none is. */
  drain(receiver: string): Promise<void> {
    const running = this.running.get(receiver);
    if (running) return running;
    const queue = this.queueOf(receiver);
    const work = this.run(receiver, queue)
      .catch((error: unknown) => this.onError(receiver, error))
      .finally(() => {
        this.running.delete(receiver);
        if (queue.length === 0 || this.stopped()) return;
        // On the next turn, not at once: a runner that ended without taking anything must not spin the event loop.
        this.restarting.add(receiver);
        setImmediate(() => {
          this.restarting.delete(receiver);
          if (!this.stopped()) void this.drain(receiver);
        });
      });
    this.running.set(receiver, work);
    return work;
  }

  /** Settles once no runner works or is about to (the notifier stops them by stopping first). */
  async idle(): Promise<void> {
    while (this.running.size > 0 || this.restarting.size > 0) {
      await Promise.allSettled([...this.running.values()]);
      if (this.restarting.size > 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private queueOf(receiver: string): T[] {
    let queue = this.queues.get(receiver);
    if (!queue) {
      queue = [];
      this.queues.set(receiver, queue);
    }
    return queue;
  }
}
