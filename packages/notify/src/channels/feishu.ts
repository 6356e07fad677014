import { createHmac } from 'node:crypto';
import type { Channel } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { plainText, title } from './format.ts';

/** Feishu/Lark's signature: base64(HMAC-SHA256 keyed with `timestamp + "\n" + secret` over nothing). */
export function feishuSign(timestampSeconds: number, secret: string): string {
  return createHmac('sha256', `${timestampSeconds}\n${secret}`).update('').digest('base64');
}

/** Feishu/Lark custom bot. Failures come back as HTTP 200 with a non-zero `code`. */
export function feishuChannel(settings: { url: string; secret?: string }, now: () => number = Date.now): Channel {
  return {
    name: 'feishu',
    async send(notification, signal) {
      const timestamp = Math.floor(now() / 1000);
      const body = {
        ...(settings.secret ? { timestamp: String(timestamp), sign: feishuSign(timestamp, settings.secret) } : {}),
        msg_type: 'text',
        content: { text: `${title(notification)}\n\n${plainText(notification)}` },
      };
      try {
        const response = await postJson(settings.url, body, {}, signal);
        const text = await response.text();
        if (!response.ok) return httpFailure(response.status, text, response.headers.get('retry-after'));
        const answer = JSON.parse(text || '{}') as { code?: number; msg?: string; StatusCode?: number };
        const code = answer.code ?? answer.StatusCode ?? 0;
        // 9499 and 11232 are Feishu's rate limits; a bad signature (19021) will not heal by retrying.
        return code === 0 ? { ok: true } : { ok: false, retriable: code === 9499 || code === 11232, error: `feishu code ${code}: ${answer.msg ?? ''}` };
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
