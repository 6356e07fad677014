import { createHmac } from 'node:crypto';
import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { fieldOf } from './field-of.ts';
import { escapeFeishuText } from './escape.ts';
import { plainText, title } from './format.ts';
import { cutJsonBytes, jsonBytes } from './truncate.ts';

/**
 * A custom bot's request body may be at most 20 KB; the text is cut to leave room for the JSON
 * around it (keys, timestamp, sign, escapes of quotes and newlines).
 * Source: https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot ("request body ≤ 20 KB")
 */
export const FEISHU_BODY_MAX_BYTES = 20 * 1024;
/** The text's share of the body, as JSON (escapes counted): the envelope (keys, timestamp, sign) fits in the other 1 KB. */
export const FEISHU_TEXT_MAX_BYTES = 19 * 1024;
/** Feishu's rate limit (11232, about 100/min and 5/s per bot): a minute clears it. Same source. */
export const FEISHU_RATE_LIMITED_RETRY_MS = 60_000;

/** The longest wait taken from Feishu's `x-ogw-ratelimit-reset` (its windows are a minute or a second; a larger value is not believed past this). */
export const FEISHU_MAX_RESET_MS = 60 * 60_000;
/** Feishu's gateway code for "request trigger frequency limit" (on a 429, or a 400 from older APIs). */
const GATEWAY_RATE_LIMITED = 99991400;

/**
 * How long Feishu's gateway says its limit lasts: `x-ogw-ratelimit-reset`, whole seconds (at most
 * FEISHU_MAX_RESET_MS); undefined when absent or not a number.
 * Source: https://open.feishu.cn/document/server-docs/api-call-guide/frequency-control ("x-ogw-ratelimit-reset: 52 //Recovery period for limit, unit: second";
 * "wait the number of seconds specified in x-ogw-ratelimit-reset, then retry")
 */
export function feishuResetMs(value: string | null): number | undefined {
  const seconds = value?.trim();
  if (seconds === undefined || !/^\d{1,9}$/.test(seconds)) return undefined;
  return Math.min(Number(seconds) * 1000, FEISHU_MAX_RESET_MS);
}

/**
 * An answer other than 2xx: a gateway rate limit (HTTP 429, or 400 with code 99991400) is retried
 * after `x-ogw-ratelimit-reset` or Retry-After, the longer when both are given; the rest as any HTTP failure.
 */
export function feishuHttpFailure(status: number, body: string, headers: { get(name: string): string | null }): DeliveryResult {
  const failure = httpFailure(status, body, headers.get('retry-after'));
  const reset = feishuResetMs(headers.get('x-ogw-ratelimit-reset'));
  const limited = status === 429 || (status === 400 && gatewayCode(body) === GATEWAY_RATE_LIMITED);
  if (failure.ok || !limited) return failure;
  const wait = Math.max(reset ?? 0, failure.retryAfterMs ?? 0);
  return { ok: false, retriable: true, error: failure.error, ...(reset !== undefined || failure.retryAfterMs !== undefined ? { retryAfterMs: wait } : {}) };
}

function gatewayCode(body: string): unknown {
  try {
    return fieldOf(JSON.parse(body), 'code');
  } catch {
    return undefined;
  }
}

/** Feishu/Lark's signature: base64(HMAC-SHA256 keyed with `timestamp + "\n" + secret` over nothing). */
export function feishuSign(timestampSeconds: number, secret: string): string {
  return createHmac('sha256', `${timestampSeconds}\n${secret}`).update('').digest('base64');
}

/**
 * What Feishu's `code` means for a retry: 11232 is its rate limit (retry after a minute); 9499 is
 * a malformed request and 19021 a bad signature or clock: no retry heals those.
 * Source: https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot (error codes)
 */
export function feishuResult(code: number, msg: string): DeliveryResult {
  if (code === 0) return { ok: true };
  const error = `feishu code ${code}: ${msg}`.slice(0, 300);
  return code === 11232 ? { ok: false, retriable: true, error, retryAfterMs: FEISHU_RATE_LIMITED_RETRY_MS } : { ok: false, retriable: false, error };
}

/** Feishu/Lark custom bot. Failures come back as HTTP 200 with a non-zero `code`. */
export function feishuChannel(settings: { url: string; secret?: string }, now: () => number = Date.now): Channel {
  return {
    name: 'feishu',
    async send(notification, signal) {
      const timestamp = Math.floor(now() / 1000);
      // The title is one short line; the summary is in full once, in the alert's lines.
      const head = `${title(notification)}\n\n`;
      const size = (s: string) => jsonBytes(escapeFeishuText(s));
      const text = cutJsonBytes(
        escapeFeishuText(`${head}${plainText(notification, { max: FEISHU_TEXT_MAX_BYTES - size(head), size })}`),
        FEISHU_TEXT_MAX_BYTES,
      );
      const body = {
        ...(settings.secret ? { timestamp: String(timestamp), sign: feishuSign(timestamp, settings.secret) } : {}),
        msg_type: 'text',
        content: { text },
      };
      try {
        const response = await postJson(settings.url, body, {}, signal);
        const answerText = await response.text();
        if (!response.ok) return feishuHttpFailure(response.status, answerText, response.headers);
        const answer = JSON.parse(answerText || '{}') as { code?: number; msg?: string; StatusCode?: number };
        const result = feishuResult(answer.code ?? answer.StatusCode ?? 0, answer.msg ?? '');
        // The message service's own limit (11232) waits a minute, or longer when the gateway says so.
        const reset = feishuResetMs(response.headers.get('x-ogw-ratelimit-reset'));
        return !result.ok && result.retriable && reset !== undefined ? { ...result, retryAfterMs: Math.max(reset, result.retryAfterMs ?? 0) } : result;
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
