import { redactSecrets } from '@gpualert/log';
import type { Notification } from '../notifier-types.ts';
import { fieldOf } from './field-of.ts';

/** How one delivery attempt ended; the shell retries what is retriable. */
export type DeliveryResult =
  { readonly ok: true; readonly detail?: string } | { readonly ok: false; readonly retriable: boolean; readonly error: string; readonly retryAfterMs?: number };

/** One destination: Slack, PagerDuty, email… One file per channel, built by its descriptor (all-channels.ts). */
export interface Channel {
  /** Its descriptor's name (all-channels.ts's ChannelName; this file sits below that list). */
  readonly name: string;
  /** `signal` aborts the attempt when the notifier stops; the outbox keeps the notification. */
  send(notification: Notification, signal?: AbortSignal): Promise<DeliveryResult>;
}

/** How long one HTTP call to a vendor may take: their APIs answer in well under a second; 10 s rides out a slow one. */
export const SEND_TIMEOUT_MS = 10_000;

/** The stop signal (when given) and the per-call timeout, whichever comes first. */
export function sendSignal(signal: AbortSignal | undefined, timeoutMs = SEND_TIMEOUT_MS): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** What every HTTP channel does with an answer that is not success. */
export function httpFailure(status: number, body: string, retryAfter: string | null): DeliveryResult {
  const retryAfterMs = parseRetryAfter(retryAfter);
  const retriable = status === 429 || status >= 500 || status === 408;
  return { ok: false, retriable, error: redactSecrets(`HTTP ${status}: ${body.slice(0, 300)}`), ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/** `Retry-After` as seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** An error that no retry heals: a URL that does not parse or carries credentials, a body that is not JSON. */
function permanent(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = fieldOf(error, 'code') ?? fieldOf(error.cause, 'code');
  if (code === 'ERR_INVALID_URL') return true;
  return error instanceof TypeError && /URL|credentials/i.test(error.message) && !/fetch failed/i.test(error.message);
}

/**
 * A network error (refused, reset, timed out) is worth retrying; an error no retry heals (a bad
 * URL) is not. The message is redacted: a URL in it may carry a webhook token.
 */
export function networkFailure(error: unknown): DeliveryResult {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const retriable = !permanent(error);
  return { ok: false, retriable, error: redactSecrets(`${retriable ? 'network' : 'permanent'}: ${text}`).slice(0, 500) };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: sendSignal(signal),
  });
}
