import type { Notification } from '../notifier-core.ts';
import type { Channel } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { escapeSlack } from './escape.ts';
import { rendered, SLACK_MRKDWN, title } from './format.ts';
import { CUT_MARK, cutChars } from './truncate.ts';

/**
 * A section block's text: at most 3,000 characters.
 * Source: https://api.slack.com/reference/block-kit/blocks#section
 */
export const SLACK_SECTION_MAX_CHARS = 3000;

/** Cut escaped mrkdwn between whole characters, and never inside an entity (`&am…` would show as text). */
export function slackSection(text: string): string {
  return cutChars(text, SLACK_SECTION_MAX_CHARS).replace(new RegExp(`&[a-z]{0,3}${CUT_MARK}$`), CUT_MARK);
}

/**
 * The message as Slack's incoming webhook takes it: a fallback `text` and one mrkdwn section; with
 * `channel` (Alertmanager's slack_configs.channel), the channel a legacy webhook or a bot posts to.
 */
export function slackMessage(notification: Notification, channel?: string): { text: string; blocks: [{ type: 'section'; text: { type: 'mrkdwn'; text: string } }]; channel?: string } {
  return { ...(channel ? { channel } : {}), text: escapeSlack(title(notification)), blocks: [{ type: 'section', text: { type: 'mrkdwn', text: slackSection(rendered(notification, SLACK_MRKDWN)) } }] };
}

/** Slack incoming webhook: 200 with body `ok`; errors are 4xx with a plain-text code; 429 carries Retry-After. */
export function slackChannel(settings: { url: string; channel?: string }): Channel {
  return {
    name: 'slack',
    async send(notification, signal) {
      try {
        const response = await postJson(settings.url, slackMessage(notification, settings.channel), {}, signal);
        const text = await response.text();
        return response.ok ? { ok: true } : httpFailure(response.status, text, response.headers.get('retry-after'));
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
