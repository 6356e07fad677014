import { createHmac } from 'node:crypto';
import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { escapeFeishuText } from './escape.ts';
import { plainText, title } from './format.ts';
import { cutJsonBytes } from './truncate.ts';

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
      const text = cutJsonBytes(escapeFeishuText(`${title(notification)}\n\n${plainText(notification)}`), FEISHU_TEXT_MAX_BYTES);
      const body = {
        ...(settings.secret ? { timestamp: String(timestamp), sign: feishuSign(timestamp, settings.secret) } : {}),
        msg_type: 'text',
        content: { text },
      };
      try {
        const response = await postJson(settings.url, body, {}, signal);
        const answerText = await response.text();
        if (!response.ok) return httpFailure(response.status, answerText, response.headers.get('retry-after'));
        const answer = JSON.parse(answerText || '{}') as { code?: number; msg?: string; StatusCode?: number };
        return feishuResult(answer.code ?? answer.StatusCode ?? 0, answer.msg ?? '');
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
