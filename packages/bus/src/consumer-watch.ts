/** How long a consumer may go without completing a fetch, or a batch stay in its handler, before a person is told. */
export const CONSUMER_STALL_MS = 30_000;

export type WatchLog = (level: 'warn' | 'info', event: string, detail: Record<string, unknown>) => void;

/**
 * Says when a consumer stops moving, which KafkaJS keeps to itself: its fetch loop retries most
 * errors forever and logs them only at debug level, so a member that has joined its group and
 * fetches nothing looks healthy. Fed the consumer's fetch and batch events; `check` (on a timer)
 * warns once per stall (`consumer_stalled`, `batch_slow`) and says when it moves again
 * (`consumer_resumed`). A handler busy with a batch is not a stalled fetch loop: KafkaJS fetches
 * again only once the batches of the last fetch are handled.
 */
export class ConsumerWatch {
  /** When it last completed a fetch or a batch. */
  private lastProgressAt: number;
  /** Batches in their handler, by `topic|partition`, with when each started and whether it was reported. */
  private readonly inHandler = new Map<string, { topic: string; partition: number; since: number; told: boolean }>();
  private stalledSince: number | undefined;

  constructor(
    private readonly group: string,
    private readonly log: WatchLog,
    now: number,
    private readonly stallMs = CONSUMER_STALL_MS,
  ) {
    this.lastProgressAt = now;
  }

  fetched(now: number): void {
    this.lastProgressAt = now;
    if (this.stalledSince === undefined) return;
    this.log('info', 'consumer_resumed', { group: this.group, stalled_ms: now - this.stalledSince });
    this.stalledSince = undefined;
  }

  batchStarted(topic: string, partition: number, now: number): void {
    this.inHandler.set(`${topic}|${partition}`, { topic, partition, since: now, told: false });
  }

  batchEnded(topic: string, partition: number, now: number): void {
    const key = `${topic}|${partition}`;
    const batch = this.inHandler.get(key);
    this.inHandler.delete(key);
    this.lastProgressAt = now;
    if (batch?.told) this.log('info', 'batch_done', { group: this.group, topic, partition, took_ms: now - batch.since });
  }

  check(now: number): void {
    for (const batch of this.inHandler.values()) {
      if (batch.told || now - batch.since < this.stallMs) continue;
      batch.told = true;
      this.log('warn', 'batch_slow', { group: this.group, topic: batch.topic, partition: batch.partition, in_handler_ms: now - batch.since });
    }
    if (this.inHandler.size > 0 || this.stalledSince !== undefined || now - this.lastProgressAt < this.stallMs) return;
    this.stalledSince = this.lastProgressAt;
    this.log('warn', 'consumer_stalled', { group: this.group, no_fetch_for_ms: now - this.lastProgressAt });
  }
}
