import type { CompiledTemplate } from '../go-template.ts';
import { renderFields } from '../render-fields.ts';
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

const eventBytes = (event: unknown) => Buffer.byteLength(JSON.stringify(event));

/**
 * Within 512 KB, never by dropping the page: the evidence gives way first, from its last line, and
 * a last line says how many were cut and why; if the rest of the details are still too large, they
 * go as one cut JSON text. The evidence kept is found by halving (about 20 sizings of the event).
 */
export function fitEvent(event: { payload: { custom_details: unknown } }, evidence: readonly string[]): void {
  if (eventBytes(event) <= PAGERDUTY_EVENT_MAX_BYTES) return;
  const details = event.payload.custom_details as Record<string, unknown>;
  const withLines = (kept: number) => ({
    ...details,
    evidence: [...evidence.slice(0, kept), `… ${evidence.length - kept} of ${evidence.length} evidence lines cut to keep the event within PagerDuty's 512 KB`],
  });
  const fits = (kept: number) => eventBytes({ ...event, payload: { ...event.payload, custom_details: withLines(kept) } }) <= PAGERDUTY_EVENT_MAX_BYTES;
  if (fits(0)) {
    let low = 0;
    let high = evidence.length - 1;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (fits(mid)) low = mid;
      else high = mid - 1;
    }
    event.payload.custom_details = withLines(low);
    return;
  }
  event.payload.custom_details = { truncated: cutChars(JSON.stringify(withLines(0)), 64 * 1024) };
}

/**
 * An Events API v1 event (`service_key`, Alertmanager's older pagerduty_configs) carrying what the
 * v2 event says: `incident_key` the dedup key, `description` the summary, `details` the fitted
 * custom details. Source: https://developer.pagerduty.com/docs/events-api-v1-overview (trigger and
 * resolve; description ≤ 1,024 characters; 200 with status "success"; 403 is its throttle).
 */
export function eventV1(serviceKey: string, v2: { event_action: string; dedup_key: string; payload: { summary: string; custom_details: unknown } }) {
  return {
    service_key: serviceKey,
    event_type: v2.event_action,
    incident_key: v2.dedup_key,
    description: v2.payload.summary,
    client: 'gpualert',
    details: v2.payload.custom_details,
  };
}

/** Settings of either API: Events API v2 with `routing_key`, v1 with `service_key`. */
export type PagerdutySettings = { readonly url: string; readonly routing_key: string } | { readonly url: string; readonly service_key: string };

/**
 * PagerDuty, one event per alert, its key the alert's fingerprint, so a second fault pages again
 * and a repeat of the same fault updates its incident. Events API v2: 202 ok, 400 never retried,
 * 429 and 5xx retried; v1 (`service_key`): 200 ok, 403 (its throttle) and 5xx retried.
 */
export function pagerdutyChannel(settings: PagerdutySettings, templates?: Readonly<Record<string, CompiledTemplate>>): Channel {
  const serviceKey = 'service_key' in settings ? settings.service_key : undefined;
  return {
    name: 'pagerduty',
    async send(notification, signal) {
      // Alertmanager's description template (pagerduty_configs) is the event's summary, rendered for the message's group.
      const r = renderFields(templates, notification);
      const description = r?.fields.description;
      for (const alert of notification.alerts) {
        const field = (s: string) => cutChars(oneLine(s), PAGERDUTY_FIELD_MAX_CHARS);
        const event = {
          routing_key: 'routing_key' in settings ? settings.routing_key : '',
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
            custom_details: {
              action: alert.action,
              evidence: alert.evidence,
              labels: alert.labels,
              ...(r?.errors.length ? { template_errors: r.errors } : {}),
            } as unknown,
          },
        };
        fitEvent(event, alert.evidence);
        let result: DeliveryResult;
        try {
          const response = await postJson(settings.url, serviceKey !== undefined ? eventV1(serviceKey, event) : event, {}, signal);
          const text = await response.text();
          if (response.status === 202 || response.ok) result = { ok: true };
          else {
            const failure = httpFailure(response.status, text, response.headers.get('retry-after'));
            result = serviceKey !== undefined && response.status === 403 && !failure.ok ? { ...failure, retriable: true } : failure;
          }
        } catch (error) {
          result = networkFailure(error);
        }
        if (!result.ok) return result;
      }
      return { ok: true };
    },
  };
}
