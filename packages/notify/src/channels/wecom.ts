import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { markdown } from './format.ts';
import { cutBytes, utf8Bytes } from './truncate.ts';

/**
 * A markdown message's `content`: at most 4,096 bytes of UTF-8.
 * Source: https://developer.work.weixin.qq.com/document/path/91770 (markdown: "最长不超过4096个字节")
 */
export const WECOM_CONTENT_MAX_BYTES = 4096;
/** Over 20 messages a minute (errcode 45009) the robot refuses until the minute is over. Same source. */
export const WECOM_RATE_LIMITED_RETRY_MS = 60_000;

/** What WeCom's `errcode` means for a retry: 45009 (over the rate) heals after a minute; the rest do not. */
export function wecomResult(errcode: number, errmsg: string): DeliveryResult {
  if (errcode === 0) return { ok: true };
  const error = `wecom errcode ${errcode}: ${errmsg}`.slice(0, 300);
  return errcode === 45009 ? { ok: false, retriable: true, error, retryAfterMs: WECOM_RATE_LIMITED_RETRY_MS } : { ok: false, retriable: false, error };
}

/** WeCom group robot: markdown `content` of at most 4096 bytes; failures as `errcode` ≠ 0. */
export function wecomChannel(settings: { url: string }): Channel {
  return {
    name: 'wecom',
    async send(notification, signal) {
      try {
        const response = await postJson(
          settings.url,
          {
            msgtype: 'markdown',
            markdown: { content: cutBytes(markdown(notification, { max: WECOM_CONTENT_MAX_BYTES, size: utf8Bytes }), WECOM_CONTENT_MAX_BYTES) },
          },
          {},
          signal,
        );
        const text = await response.text();
        if (!response.ok) return httpFailure(response.status, text, response.headers.get('retry-after'));
        const answer = JSON.parse(text || '{}') as { errcode?: number; errmsg?: string };
        return wecomResult(answer.errcode ?? 0, answer.errmsg ?? '');
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
