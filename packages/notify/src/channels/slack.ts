import type { CompiledTemplate } from '../go-template.ts';
import type { Notification } from '../notifier-types.ts';
import { renderFields } from '../render-fields.ts';
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
/** Slack's limits on an image block. Source: https://api.slack.com/reference/block-kit/blocks#image */
export const SLACK_IMAGE_URL_MAX_CHARS = 3000;
export const SLACK_ALT_TEXT_MAX_CHARS = 2000;

type SlackBlock = { type: 'section'; text: { type: 'mrkdwn'; text: string } } | { type: 'image'; image_url: string; alt_text: string };
interface SlackLook {
  readonly channel?: string;
  readonly icon_url?: string;
  readonly image_url?: string;
}

export function slackMessage(
  notification: Notification,
  look: SlackLook = {},
  templates?: Readonly<Record<string, CompiledTemplate>>,
): { text: string; blocks: SlackBlock[]; channel?: string; username?: string; icon_emoji?: string; icon_url?: string } {
  // Alertmanager's title and text templates (slack_configs), values printed into them escaped for mrkdwn so no label pings or links.
  const r = renderFields(templates, notification, escapeSlack);
  const own = r?.fields;
  const text = own?.title !== undefined ? slackSection(own.title) : escapeSlack(title(notification));
  // A template that fails on this message (a bound, a bad regex): gpualert's own text, and the error said in it, never a lost alert.
  const errors = r?.errors.length ? `\n\n_${escapeSlack(r.errors.join('; '))}_` : '';
  const body =
    (own?.text !== undefined ? own.text : rendered(notification, SLACK_MRKDWN, { max: SLACK_SECTION_MAX_CHARS - errors.length, size: (s) => s.length })) +
    errors;
  // A section's text may not be empty (Slack refuses the message): an empty template leaves only the title.
  const blocks: SlackBlock[] = body.trim() === '' ? [] : [{ type: 'section', text: { type: 'mrkdwn', text: slackSection(body) } }];
  if (look.image_url && look.image_url.length <= SLACK_IMAGE_URL_MAX_CHARS)
    blocks.push({ type: 'image', image_url: look.image_url, alt_text: cutChars(title(notification), SLACK_ALT_TEXT_MAX_CHARS) });
  // Alertmanager's username, icon_emoji and icon_url: what Slack's incoming webhook takes for the sender's look.
  const username = own?.username?.trim();
  const iconEmoji = own?.icon_emoji?.trim();
  return {
    ...(look.channel ? { channel: look.channel } : {}),
    text,
    blocks,
    ...(username ? { username } : {}),
    ...(iconEmoji ? { icon_emoji: iconEmoji } : {}),
    ...(look.icon_url ? { icon_url: look.icon_url } : {}),
  };
}

/** Slack incoming webhook: 200 with body `ok`; errors are 4xx with a plain-text code; 429 carries Retry-After. */
export function slackChannel(settings: { url: string } & SlackLook, templates?: Readonly<Record<string, CompiledTemplate>>): Channel {
  return {
    name: 'slack',
    async send(notification, signal) {
      try {
        const response = await postJson(settings.url, slackMessage(notification, settings, templates), {}, signal);
        const text = await response.text();
        return response.ok ? { ok: true } : httpFailure(response.status, text, response.headers.get('retry-after'));
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
