import { redactSecrets } from '@gpualert/log';
import type { Channel, DeliveryResult, Notification, RateLimit } from '@gpualert/notify';
import { must } from './must.ts';

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

/**
 * A destination's rate as the vendor counts it: at most `perSecond` sends in any one-second window
 * and `perMinute` in any sixty-second window (sliding windows, so no burst ever exceeds either:
 * 20 a minute means 20 in the first minute, not a burst plus a refill).
 */
export class RateLimiter {
  private readonly limits: { readonly windowMs: number; readonly max: number }[];
  /** Send times within the longest window, oldest first. */
  private readonly sent: number[] = [];

  constructor(limit: RateLimit | number, _now?: number) {
    const { perSecond, perMinute } = typeof limit === 'number' ? { perSecond: undefined, perMinute: limit } : limit;
    this.limits = [
      ...(perSecond !== undefined ? [{ windowMs: 1_000, max: Math.max(1, Math.floor(perSecond)) }] : []),
      ...(perMinute !== undefined ? [{ windowMs: 60_000, max: Math.max(1, Math.floor(perMinute)) }] : []),
    ];
  }

  take(now: number): boolean {
    if (this.waitMs(now) > 0) return false;
    this.sent.push(now);
    return true;
  }

  /** How long until the next send is allowed (0: now). */
  waitMs(now: number = Date.now()): number {
    const longest = Math.max(0, ...this.limits.map((l) => l.windowMs));
    for (let t = this.sent[0]; t !== undefined && t <= now - longest; t = this.sent[0]) this.sent.shift();
    let wait = 0;
    for (const { windowMs, max } of this.limits) {
      const inWindow = this.sent.filter((t) => t > now - windowMs);
      const oldest = inWindow.length >= max ? inWindow[inWindow.length - max] : undefined;
      if (oldest !== undefined) wait = Math.max(wait, oldest + windowMs - now);
    }
    return wait;
  }
}

/** The former name: a destination's limiter. */
export const TokenBucket = RateLimiter;
export type TokenBucket = RateLimiter;

/** Several notifications folded into one digest when a destination's rate is exceeded. */
export function digest(notifications: readonly Notification[]): Notification {
  const first = must(notifications[0], 'a digest of at least one notification');
  const alerts = notifications.flatMap((n) => n.alerts);
  return {
    id: `digest-${notifications
      .map((n) => n.id)
      .join('+')
      .slice(0, 200)}`,
    receiver: first.receiver,
    group: `digest:${first.receiver}`,
    reason: alerts.every((a) => a.status === 'resolved') ? 'resolved' : 'new_alerts',
    alerts,
    firing: notifications.reduce((n, x) => n + x.firing, 0),
  };
}
