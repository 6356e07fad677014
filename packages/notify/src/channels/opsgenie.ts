import type { CompiledTemplate } from '../go-template.ts';
import { renderFields } from '../render-fields.ts';
import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { oneLine } from './escape.ts';
import { plainText } from './format.ts';
import { cutChars } from './truncate.ts';

const PRIORITY = { critical: 'P1', error: 'P2', warning: 'P3', info: 'P5' } as const;

/**
 * Create-alert limits: `message` 130 characters, `alias` 512, `description` 15,000, `entity` 512,
 * `source` 100, at most 20 `tags` of 50 characters; a close `note` 25,000.
 * Source: https://docs.opsgenie.com/docs/alert-api#create-alert
 */
export const OPSGENIE_LIMITS = { message: 130, alias: 512, description: 15_000, entity: 512, source: 100, tags: 20, tag: 50, note: 25_000 } as const;

/** Opsgenie: `alias` = fingerprint as the dedup key, `message` ≤ 130 characters; close by alias. */
export function opsgenieChannel(settings: { url: string; api_key: string }, templates?: Readonly<Record<string, CompiledTemplate>>): Channel {
  const base = settings.url.replace(/\/$/, '');
  return {
    name: 'opsgenie',
    async send(notification, signal) {
      // Alertmanager's message and description templates (opsgenie_configs), rendered for the message's group.
      const r = renderFields(templates, notification);
      const own = r?.fields;
      const errors = r?.errors.length ? `\n\n${r.errors.join('\n')}` : '';
      const headers = { authorization: `GenieKey ${settings.api_key}` };
      for (const alert of notification.alerts) {
        const alias = cutChars(alert.fingerprint, OPSGENIE_LIMITS.alias);
        let result: DeliveryResult;
        try {
          const response =
            alert.status === 'resolved'
              ? await postJson(
                  `${base}/v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`,
                  { source: 'gpualert', note: cutChars(`resolved: ${oneLine(alert.summary)}`, OPSGENIE_LIMITS.note) },
                  headers,
                  signal,
                )
              : await postJson(
                  `${base}/v2/alerts`,
                  {
                    message: cutChars(oneLine(own?.message ?? alert.summary), OPSGENIE_LIMITS.message),
                    alias,
                    description: cutChars((own?.description ?? plainText({ ...notification, alerts: [alert] })) + errors, OPSGENIE_LIMITS.description),
                    priority: PRIORITY[alert.severity],
                    source: 'gpualert',
                    entity: cutChars(oneLine(alert.host), OPSGENIE_LIMITS.entity),
                    tags: [alert.category, alert.severity].map((t) => cutChars(oneLine(t), OPSGENIE_LIMITS.tag)).slice(0, OPSGENIE_LIMITS.tags),
                  },
                  headers,
                  signal,
                );
          result = response.ok ? { ok: true } : httpFailure(response.status, await response.text(), response.headers.get('retry-after'));
        } catch (error) {
          result = networkFailure(error);
        }
        if (!result.ok) return result;
      }
      return { ok: true };
    },
  };
}
