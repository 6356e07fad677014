import type { CompiledTemplate } from '../go-template.ts';
import { renderFields } from '../receiver-templates.ts';
import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { oneLine } from './escape.ts';
import { cutChars } from './truncate.ts';

/**
 * Events API v2 limits: `payload.summary` ≤ 1,024 characters, `dedup_key` ≤ 255, the whole event
 * ≤ 512 KB. Source: https://developer.pagerduty.com/docs/events-api-v2/trigger-events/
 */
export const PAGERDUTY_SUMMARY_MAX_CHARS = 1024;
export const PAGERDUTY_DEDUP_KEY_MAX_CHARS = 255;
export const PAGERDUTY_EVENT_MAX_BYTES = 512 * 1024;
/** `source`, `component`, `group`, `class` are short identifiers; 255 keeps a hostile host from filling the event. */
export const PAGERDUTY_FIELD_MAX_CHARS = 255;
/** The severities Events v2 accepts. Same source. */
export const PAGERDUTY_SEVERITIES = ['critical', 'error', 'warning', 'info'] as const;

/**
 * PagerDuty Events API v2: one event per alert, `dedup_key` = the alert's fingerprint, so a
 * second fault pages again and a repeat of the same fault updates its incident. 202 ok, 400
 * never retried, 429 and 5xx retried.
 */
export function pagerdutyChannel(settings: { url: string; routing_key: string }, templates?: Readonly<Record<string, CompiledTemplate>>): Channel {
  return {
    name: 'pagerduty',
    async send(notification, signal) {
      // Alertmanager's description template (pagerduty_configs) is the event's summary, rendered for the message's group.
      const r = renderFields(templates, notification);
      const description = r?.fields.description;
      for (const alert of notification.alerts) {
        const field = (s: string) => cutChars(oneLine(s), PAGERDUTY_FIELD_MAX_CHARS);
        const event = {
          routing_key: settings.routing_key,
          event_action: alert.status === 'resolved' ? 'resolve' : 'trigger',
          dedup_key: cutChars(alert.fingerprint, PAGERDUTY_DEDUP_KEY_MAX_CHARS),
          payload: {
            summary: cutChars(oneLine(description ?? alert.summary), PAGERDUTY_SUMMARY_MAX_CHARS),
            source: field(alert.host),
            severity: alert.severity,
            timestamp: alert.startsAt,
            component: field(alert.gpu !== undefined ? `GPU ${alert.gpu}` : alert.host),
            group: field(alert.labels.cluster ?? alert.host),
            class: field(alert.category),
            custom_details: { action: alert.action, evidence: alert.evidence, labels: alert.labels, ...(r?.errors.length ? { template_errors: r.errors } : {}) } as unknown,
          },
        };
        // Within 512 KB: the details give way first (as one cut JSON text), never the page itself.
        if (Buffer.byteLength(JSON.stringify(event)) > PAGERDUTY_EVENT_MAX_BYTES) {
          event.payload.custom_details = { truncated: cutChars(JSON.stringify(event.payload.custom_details), 64 * 1024) };
        }
        let result: DeliveryResult;
        try {
          const response = await postJson(settings.url, event, {}, signal);
          const text = await response.text();
          result = response.status === 202 || response.ok ? { ok: true } : httpFailure(response.status, text, response.headers.get('retry-after'));
        } catch (error) {
          result = networkFailure(error);
        }
        if (!result.ok) return result;
      }
      return { ok: true };
    },
  };
}
