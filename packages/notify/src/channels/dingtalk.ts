import { createHmac } from 'node:crypto';
import type { Channel } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { markdown, title } from './format.ts';

/** DingTalk's signature: base64(HMAC-SHA256 keyed with the secret over `timestamp + "\n" + secret`), ms timestamp. */
export function dingtalkSign(timestampMs: number, secret: string): string {
  return createHmac('sha256', secret).update(`${timestampMs}\n${secret}`).digest('base64');
}

/** DingTalk robot. Failures come back as HTTP 200 with `errcode` ≠ 0; 20 messages a minute. */
export function dingtalkChannel(settings: { url: string; secret?: string }, now: () => number = Date.now): Channel {
  return {
    name: 'dingtalk',
    async send(notification, signal) {
      try {
        // Inside the try: a URL that does not parse is a failed delivery, never a crash.
        const url = new URL(settings.url);
        if (settings.secret) {
          const timestamp = now();
          url.searchParams.set('timestamp', String(timestamp));
          url.searchParams.set('sign', dingtalkSign(timestamp, settings.secret));
        }
        const response = await postJson(url.toString(), { msgtype: 'markdown', markdown: { title: title(notification).slice(0, 60), text: markdown(notification) } }, {}, signal);
        const text = await response.text();
        if (!response.ok) return httpFailure(response.status, text, response.headers.get('retry-after'));
        const answer = JSON.parse(text || '{}') as { errcode?: number; errmsg?: string };
        // 130101: sending too fast (blocked for ten minutes): retriable, later.
        return (answer.errcode ?? 0) === 0 ? { ok: true } : { ok: false, retriable: answer.errcode === 130101, error: `dingtalk errcode ${answer.errcode}: ${answer.errmsg ?? ''}`, ...(answer.errcode === 130101 ? { retryAfterMs: 60_000 } : {}) };
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
