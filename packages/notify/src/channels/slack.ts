import type { CompiledTemplate } from '../go-template.ts';
import type { Notification } from '../notifier-core.ts';
import { renderFields } from '../receiver-templates.ts';
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
export function slackMessage(notification: Notification, channel?: string, templates?: Readonly<Record<string, CompiledTemplate>>): { text: string; blocks: { type: 'section'; text: { type: 'mrkdwn'; text: string } }[]; channel?: string } {
  // Alertmanager's title and text templates (slack_configs), values printed into them escaped for mrkdwn so no label pings or links.
  const r = renderFields(templates, notification, escapeSlack);
  const own = r?.fields;
  const text = own?.title !== undefined ? slackSection(own.title) : escapeSlack(title(notification));
  // A template that fails on this message (a bound, a bad regex): gpualert's own text, and the error said in it, never a lost alert.
  const errors = r?.errors.length ? `\n\n_${escapeSlack(r.errors.join('; '))}_` : '';
  const body = (own?.text !== undefined ? own.text : rendered(notification, SLACK_MRKDWN, { max: SLACK_SECTION_MAX_CHARS - errors.length, size: (s) => s.length })) + errors;
  // A section's text may not be empty (Slack refuses the message): an empty template leaves only the title.
  return { ...(channel ? { channel } : {}), text, blocks: body.trim() === '' ? [] : [{ type: 'section', text: { type: 'mrkdwn', text: slackSection(body) } }] };
}

/** Slack incoming webhook: 200 with body `ok`; errors are 4xx with a plain-text code; 429 carries Retry-After. */
export function slackChannel(settings: { url: string; channel?: string }, templates?: Readonly<Record<string, CompiledTemplate>>): Channel {
  return {
    name: 'slack',
    async send(notification, signal) {
      try {
        const response = await postJson(settings.url, slackMessage(notification, settings.channel, templates), {}, signal);
        const text = await response.text();
        return response.ok ? { ok: true } : httpFailure(response.status, text, response.headers.get('retry-after'));
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
