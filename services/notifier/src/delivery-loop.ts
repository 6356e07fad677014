import { DEADLETTER_HEADERS, envelopeMessage, type Bus } from '@gpualert/bus';
import { redactSecrets, type Logger } from '@gpualert/log';
import { createChannel, rateLimitOf, type Channel, type Notification, type RoutesFile } from '@gpualert/notify';
import { newEnvelope, stringifyPaced, TOPICS, type NotificationData } from '@gpualert/schema';
import { DEFAULT_RETRY, deliver, digest, RateLimiter, sleep, type RetryPolicy } from './delivery.ts';
import type { NotifierMetrics } from './notifier-http.ts';
import type { Outbox, Outgoing } from './outbox.ts';
import { must } from './must.ts';
import { nextToSend } from './next-to-send.ts';
import { ReceiverQueues } from './receiver-queues.ts';

const SOURCE = 'notifier/0.1.0';
/**
 * Delivery records being published at once. The record of an attempt is published beside the
 * paging path, never in it: a slow or unreachable Kafka must not hold the next page or retry. Past
 * this many waiting, a record is dropped (logged, counted) rather than held in memory without end.
 */
export const MAX_RECORDS_IN_FLIGHT = 1_000;

export interface DeliveryLoopOptions {
  readonly routes: RoutesFile;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly bus: Bus;
  readonly log: Logger;
  readonly outbox: Outbox;
  readonly retry?: RetryPolicy | undefined;
  readonly metrics?: NotifierMetrics | undefined;
  /** After a destination took these (answered 2xx), before they leave the outbox; what it throws is logged, the delivery stands. */
  readonly taken?: ((taken: readonly Outgoing[]) => Promise<void>) | undefined;
}

/** A reload's channels, built ahead (DeliveryLoop.prepare) and put in use once the reload holds (apply). */
export interface PreparedChannels {
  readonly routes: RoutesFile;
  readonly channels: Map<string, Channel>;
  readonly buckets: Map<string, RateLimiter>;
}

/**
 * The delivery loop: one queue per receiver, sent in order at the receiver's rate (what waits over
 * it folded into one digest), each message retried by the delivery's policy, recorded on
 * gpualert.notifications, dead-lettered when it cannot go, and taken out of the outbox once done.
 */
export class DeliveryLoop {
  private channels = new Map<string, Channel>();
  private buckets = new Map<string, RateLimiter>();
  private routes: RoutesFile;
  /** Receivers whose last attempt failed: warned about once until one gets through. */
  private readonly failing = new Set<string>();
  private stopped = false;
  /** Aborted on stop: ends every backoff, rate-limit wait and in-flight send at once (the outbox keeps what is unsent). */
  private readonly stopping = new AbortController();
  private readonly queues: ReceiverQueues<Outgoing>;
  /** Delivery records still being published (recordAside). */
  private readonly recording = new Set<Promise<void>>();

  constructor(private readonly options: DeliveryLoopOptions) {
    this.routes = options.routes;
    this.apply(this.prepare(options.routes));
    // Nothing a channel does may reject a runner: it is not awaited where it starts.
    this.queues = new ReceiverQueues<Outgoing>(
      (receiver, queue) => this.send(receiver, queue),
      (receiver, error) => options.log.error({ receiver, error: redactSecrets(String(error)) }, 'notification_drain_failed'),
      () => this.stopped,
    );
  }

  /**
   * The channels of these routes, built but not yet in use (a reload): one that cannot be built
   * (a setting's variable unset) throws here, before anything changed.
   */
  prepare(routes: RoutesFile): PreparedChannels {
    const channels = new Map<string, Channel>();
    const buckets = new Map<string, RateLimiter>();
    for (const receiver of routes.receivers) {
      channels.set(receiver.name, createChannel(receiver, this.options.env));
      const limit = rateLimitOf(receiver);
      // A receiver whose rate is unchanged keeps its bucket: a reload is no way around a vendor's limit.
      const kept = this.buckets.get(receiver.name);
      const same = this.routes.receivers.some((r) => r.name === receiver.name && JSON.stringify(rateLimitOf(r)) === JSON.stringify(limit));
      if (limit) buckets.set(receiver.name, kept && same ? kept : new RateLimiter(limit));
    }
    return { routes, channels, buckets };
  }

  /** Sends with these channels from now on: what waits in a queue goes with its receiver's new settings; a receiver gone is dead-lettered. */
  apply(prepared: PreparedChannels): void {
    this.channels = prepared.channels;
    this.buckets = prepared.buckets;
    this.routes = prepared.routes;
  }

  get receivers(): string[] {
    return [...this.channels.keys()];
  }

  channelOf(receiver: string): string {
    return this.routes.receivers.find((r) => r.name === receiver)?.channel ?? 'record';
  }

  /** One line of gpualert.notifications (sent, failed, suppressed, a silence made or expired). */
  async record(data: NotificationData, host: string): Promise<void> {
    this.options.metrics?.notifications.inc({ receiver: data.receiver, outcome: data.outcome });
    await this.options.bus.publish(TOPICS.notifications, [envelopeMessage(newEnvelope({ type: 'notification', host, source: SOURCE, data }))]);
  }

  /**
   * One attempt's record, published beside the delivery rather than awaited by it: the next page
   * or retry never waits on Kafka. A record that cannot be published is logged and lost; the page
   * it tells of is not affected.
   */
  private recordAside(data: NotificationData, host: string): void {
    const { log, metrics } = this.options;
    if (this.recording.size >= MAX_RECORDS_IN_FLIGHT) {
      metrics?.notifications.inc({ receiver: data.receiver, outcome: 'record_dropped' });
      log.error({ receiver: data.receiver, attempt: data.attempt, outcome: data.outcome }, 'notification_record_dropped');
      return;
    }
    const publishing: Promise<void> = this.record(data, host)
      .catch((error: unknown) => log.error({ error: redactSecrets(String(error)) }, 'notification_record_failed'))
      .finally(() => this.recording.delete(publishing));
    this.recording.add(publishing);
  }

  /** Queues a notification already in the outbox (the same id twice is queued once). */
  enqueue(notification: Notification, queuedAt: number): void {
    this.queues.push(notification.receiver, { notification, queuedAt }, (q) => q.notification.id === notification.id);
  }

  /** Gives up at once (backoffs, rate waits and sends abort; the outbox keeps what is unsent) and waits for the queues to stop. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await this.queues.idle();
    // Records already handed to the bus go out before it closes (each publish has its own timeout).
    await Promise.allSettled([...this.recording]);
  }

  /** Sends what waits for one receiver, in order, until none is left or the loop stops. */
  private async send(receiver: string, queue: Outgoing[]): Promise<void> {
    const { log, metrics, bus, outbox } = this.options;
    while (queue.length > 0 && !this.stopped) {
      const bucket = this.buckets.get(receiver);
      if (bucket && !bucket.take(Date.now())) {
        await sleep(bucket.waitMs(), this.stopping.signal);
        continue;
      }
      // Over the destination's rate, what waits is folded into one digest rather than dropped.
      // Otherwise one message, the most urgent that may go now (next-to-send.ts).
      const batch = bucket && queue.length > 1 && bucket.waitMs() > 0 ? queue.splice(0) : queue.splice(nextToSend(queue), 1);
      const notification =
        batch.length > 1 ? digest(batch.map((b) => b.notification)) : must(batch[0], 'a batch taken from a queue that is not empty').notification;
      const host = notification.alerts[0]?.host ?? 'notifier';
      const fingerprints = notification.alerts.map((a) => a.fingerprint);
      const result = await deliver(
        this.channels.get(receiver) ?? goneReceiver(receiver),
        notification,
        this.options.retry ?? DEFAULT_RETRY,
        ({ attempt, result: r, retryInMs }) => {
          // One warning when a receiver starts failing and one line when it is back: a person sees
          // that pages are not getting through without a line per retry.
          if (!r.ok && !this.failing.has(receiver)) {
            this.failing.add(receiver);
            log.warn({ receiver, attempt, error: redactSecrets(r.error) }, 'receiver_failing');
          } else if (r.ok && this.failing.delete(receiver)) {
            log.info({ receiver, attempt }, 'receiver_recovered');
          }
          this.recordAside(
            {
              receiver,
              channel: this.channelOf(receiver),
              fingerprints,
              reason: batch.length > 1 ? `digest:${notification.reason}` : notification.reason,
              outcome: r.ok ? 'sent' : 'failed',
              attempt,
              notification_id: notification.id.slice(0, 256),
              ...(r.ok ? {} : { error: redactSecrets(r.error) }),
              ...(retryInMs !== undefined ? { retry_in_ms: retryInMs } : {}),
            },
            host,
          );
        },
        () => this.stopped,
        Math.random,
        this.stopping.signal,
      );
      if (this.stopped && !result.ok) return; // stays in the outbox for the next start
      if (!result.ok) {
        const error = redactSecrets(result.error);
        log.error({ receiver, fingerprints, error }, 'notification_dead_lettered');
        metrics?.notifications.inc({ receiver, outcome: 'dead_lettered' });
        await bus.publish(TOPICS.deadletter, [
          {
            key: host,
            value: await stringifyPaced(notification),
            headers: { [DEADLETTER_HEADERS.reason]: `delivery to ${receiver} failed: ${error}`, [DEADLETTER_HEADERS.topic]: TOPICS.notifications },
          },
        ]);
      }
      if (result.ok && this.options.taken)
        await this.options.taken(batch).catch((error: unknown) => log.error({ receiver, error: redactSecrets(String(error)) }, 'notification_taken_failed'));
      await outbox.remove(batch.map((b) => b.notification.id));
    }
  }
}

/** An outbox entry queued for a receiver the routes no longer have (renamed, removed): a permanent failure, dead-lettered with why. */
function goneReceiver(receiver: string): Channel {
  return {
    name: 'record',
    send: () =>
      Promise.resolve({
        ok: false,
        retriable: false,
        error: `receiver ${JSON.stringify(receiver.slice(0, 200))} is not in the routes (renamed or removed since this was queued)`,
      }),
  };
}
