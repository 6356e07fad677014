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

/**
 * Sends until the channel takes it, a permanent error, or the policy gives up. Retries 5xx,
 * 429 and network errors with exponential backoff and jitter, honouring `Retry-After`.
 */
export async function deliver(
  channel: Channel,
  notification: Notification,
  policy: RetryPolicy,
  onAttempt: (attempt: Attempt) => Promise<void> | void,
  stopped: () => boolean,
  random: () => number = Math.random,
): Promise<DeliveryResult> {
  const started = Date.now();
  for (let attempt = 1; ; attempt += 1) {
    const result = await channel.send(notification);
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
    await new Promise((resolve) => setTimeout(resolve, delay));
    if (stopped()) return result;
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
