import { createHmac } from 'node:crypto';
import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { escapeChatMarkdown } from './escape.ts';
import { markdown, title } from './format.ts';
import { cutChars, cutJsonBytes, jsonBytes } from './truncate.ts';

/** The markdown `title` shows only in the conversation list's preview: 60 characters is what fits there. */
export const DINGTALK_TITLE_MAX_CHARS = 60;
/**
 * The markdown text, counted as JSON bytes. The robot documents no figure for markdown; DingTalk's
 * robot message API bounds a message's parameters at 15,000 bytes, the tightest published number.
 * Source: https://open.dingtalk.com/document/orgapp/the-robot-sends-a-group-message (msgParam ≤ 15,000 bytes)
 */
export const DINGTALK_TEXT_MAX_BYTES = 15_000;
/**
 * Over 20 messages a minute a robot is throttled for 10 minutes (errcode 130101): retrying sooner
 * only extends the block.
 * Source: https://open.dingtalk.com/document/orgapp/custom-robot-access ("每个机器人每分钟最多发送20条…限流10分钟")
 */
export const DINGTALK_THROTTLED_RETRY_MS = 10 * 60_000;

/** DingTalk's signature: base64(HMAC-SHA256 keyed with the secret over `timestamp + "\n" + secret`), ms timestamp. */
export function dingtalkSign(timestampMs: number, secret: string): string {
  return createHmac('sha256', secret).update(`${timestampMs}\n${secret}`).digest('base64');
}

/** What DingTalk's `errcode` means for a retry: only 130101 (throttled) heals, after its 10 minutes. */
export function dingtalkResult(errcode: number, errmsg: string): DeliveryResult {
  if (errcode === 0) return { ok: true };
  const error = `dingtalk errcode ${errcode}: ${errmsg}`.slice(0, 300);
  return errcode === 130101 ? { ok: false, retriable: true, error, retryAfterMs: DINGTALK_THROTTLED_RETRY_MS } : { ok: false, retriable: false, error };
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
        const body = {
          msgtype: 'markdown',
          markdown: {
            title: escapeChatMarkdown(cutChars(title(notification), DINGTALK_TITLE_MAX_CHARS)),
            text: cutJsonBytes(markdown(notification, { max: DINGTALK_TEXT_MAX_BYTES, size: jsonBytes }), DINGTALK_TEXT_MAX_BYTES),
          },
        };
        const response = await postJson(url.toString(), body, {}, signal);
        const text = await response.text();
        if (!response.ok) return httpFailure(response.status, text, response.headers.get('retry-after'));
        const answer = JSON.parse(text || '{}') as { errcode?: number; errmsg?: string };
        return dingtalkResult(answer.errcode ?? 0, answer.errmsg ?? '');
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
