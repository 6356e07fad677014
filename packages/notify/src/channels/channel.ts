import type { Notification } from '../notifier-core.ts';
import type { ChannelName } from '../route-config.ts';

/** How one delivery attempt ended; the shell retries what is retriable. */
export type DeliveryResult =
  | { readonly ok: true; readonly detail?: string }
  | { readonly ok: false; readonly retriable: boolean; readonly error: string; readonly retryAfterMs?: number };

/** One destination: Slack, PagerDuty, email… One file per channel, one registry. */
export interface Channel {
  readonly name: ChannelName;
  send(notification: Notification): Promise<DeliveryResult>;
}

/** What every HTTP channel does with an answer that is not success. */
export function httpFailure(status: number, body: string, retryAfter: string | null): DeliveryResult {
  const retryAfterMs = parseRetryAfter(retryAfter);
  const retriable = status === 429 || status >= 500 || status === 408;
  return { ok: false, retriable, error: `HTTP ${status}: ${body.slice(0, 300)}`, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/** `Retry-After` as seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** A network error (refused, reset, timed out) is always worth retrying. */
export function networkFailure(error: unknown): DeliveryResult {
  return { ok: false, retriable: true, error: `network: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
}
