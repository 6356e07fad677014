import type { Channel } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { markdown, title } from './format.ts';

/** Slack incoming webhook: 200 with body `ok`; errors are 4xx with a plain-text code. */
export function slackChannel(settings: { url: string }): Channel {
  return {
    name: 'slack',
    async send(notification, signal) {
      try {
        const response = await postJson(settings.url, { text: title(notification), blocks: [{ type: 'section', text: { type: 'mrkdwn', text: markdown(notification).slice(0, 2900) } }] }, {}, signal);
        const body = await response.text();
        return response.ok ? { ok: true } : httpFailure(response.status, body, response.headers.get('retry-after'));
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
