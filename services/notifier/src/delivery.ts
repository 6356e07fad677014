import { redactSecrets } from '@gpualert/log';
import type { Channel, DeliveryResult, Notification } from '@gpualert/notify';

export interface RetryPolicy {
  /** First retry after about this long; doubled each time, with jitter. */
  readonly baseMs: number;
  readonly maxDelayMs: number;
  /** Give up (and dead-letter) once this much time has passed since the first attempt. */
  readonly giveUpAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 1_000, maxDelayMs: 60_000, giveUpAfterMs: 60 * 60_000 };

export interface Attempt {
  readonly attempt: number;
  readonly result: DeliveryResult;
  /** When the next attempt is due, if there is one. */
  readonly retryInMs?: number;
}

/** Waits `ms`, or less when `signal` aborts (a stopping notifier does not sit out a backoff). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * One attempt, never a throw: a channel that throws (a bug, a setting no one checked) is a
 * permanent failed delivery, so it is dead-lettered, not retried, and never takes the process
 * down. Every error text leaves redacted: it lands on gpualert.notifications and the timeline.
 */
export async function attemptOnce(channel: Channel, notification: Notification, signal?: AbortSignal): Promise<DeliveryResult> {
  let result: DeliveryResult;
  try {
    result = await channel.send(notification, signal);
  } catch (error) {
    result = { ok: false, retriable: false, error: `${channel.name} failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` };
  }
  return result.ok ? result : { ...result, error: redactSecrets(result.error).slice(0, 500) };
}

/**
 * Sends until the channel takes it, a permanent error, or the policy gives up. Retries 5xx,
 * 429 and network errors with exponential backoff and jitter, honouring `Retry-After`. `signal`
 * (the notifier stopping) ends a backoff and an in-flight send at once.
 */
export async function deliver(
  channel: Channel,
  notification: Notification,
  policy: RetryPolicy,
  onAttempt: (attempt: Attempt) => Promise<void> | void,
  stopped: () => boolean,
  random: () => number = Math.random,
  signal?: AbortSignal,
): Promise<DeliveryResult> {
  const started = Date.now();
  for (let attempt = 1; ; attempt += 1) {
    const result = await attemptOnce(channel, notification, signal);
    if (result.ok || !result.retriable) {
      await onAttempt({ attempt, result });
      return result;
    }
    const backoff = Math.min(policy.maxDelayMs, policy.baseMs * 2 ** (attempt - 1));
    const delay = Math.max(result.retryAfterMs ?? 0, backoff * (0.5 + random() * 0.5));
    if (Date.now() + delay - started > policy.giveUpAfterMs || stopped()) {
      await onAttempt({ attempt, result });
      return result;
    }
    await onAttempt({ attempt, result, retryInMs: Math.round(delay) });
    await sleep(delay, signal);
    if (stopped() || signal?.aborted) return result;
  }
}

/** A token bucket per destination at the vendor's documented rate. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(private readonly perMinute: number, now: number) {
    this.tokens = Math.max(1, Math.min(perMinute, 10));
    this.last = now;
  }

  take(now: number): boolean {
    this.tokens = Math.min(Math.max(1, Math.min(this.perMinute, 10)), this.tokens + ((now - this.last) / 60_000) * this.perMinute);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** How long until the next token. */
  waitMs(): number {
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.perMinute) * 60_000);
  }
}

/** Several notifications folded into one digest when a destination's rate is exceeded. */
export function digest(notifications: readonly Notification[]): Notification {
  const first = notifications[0]!;
  const alerts = notifications.flatMap((n) => n.alerts);
  return {
    id: `digest-${notifications.map((n) => n.id).join('+').slice(0, 200)}`,
    receiver: first.receiver,
    group: `digest:${first.receiver}`,
    reason: alerts.every((a) => a.status === 'resolved') ? 'resolved' : 'new_alerts',
    alerts,
    firing: notifications.reduce((n, x) => n + x.firing, 0),
  };
}
