import type { Channel } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { markdown } from './format.ts';

/** Cuts UTF-8 text to a byte budget without splitting a character. */
function truncateBytes(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  if (buffer.length <= bytes) return text;
  return buffer.subarray(0, bytes).toString('utf8').replace(/\uFFFD$/, '');
}

/** WeCom group robot: markdown `content` of at most 4096 bytes; failures as `errcode` ≠ 0. */
export function wecomChannel(settings: { url: string }): Channel {
  return {
    name: 'wecom',
    async send(notification, signal) {
      try {
        const response = await postJson(settings.url, { msgtype: 'markdown', markdown: { content: truncateBytes(markdown(notification), 4096) } }, {}, signal);
        const text = await response.text();
        if (!response.ok) return httpFailure(response.status, text, response.headers.get('retry-after'));
        const answer = JSON.parse(text || '{}') as { errcode?: number; errmsg?: string };
        // 45009: over the 20-a-minute limit.
        return (answer.errcode ?? 0) === 0 ? { ok: true } : { ok: false, retriable: answer.errcode === 45009, error: `wecom errcode ${answer.errcode}: ${answer.errmsg ?? ''}` };
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
