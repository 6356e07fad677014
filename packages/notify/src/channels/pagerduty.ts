import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';

/**
 * PagerDuty Events API v2: one event per alert, `dedup_key` = the alert's fingerprint, so a
 * second fault pages again and a repeat of the same fault updates its incident. 202 ok, 400
 * never retried, 429 and 5xx retried.
 */
export function pagerdutyChannel(settings: { url: string; routing_key: string }): Channel {
  return {
    name: 'pagerduty',
    async send(notification, signal) {
      for (const alert of notification.alerts) {
        const body = {
          routing_key: settings.routing_key,
          event_action: alert.status === 'resolved' ? 'resolve' : 'trigger',
          dedup_key: alert.fingerprint,
          payload: {
            summary: alert.summary.slice(0, 1024),
            source: alert.host,
            severity: alert.severity,
            timestamp: alert.startsAt,
            component: alert.gpu !== undefined ? `GPU ${alert.gpu}` : alert.host,
            group: alert.labels.cluster ?? alert.host,
            class: alert.category,
            custom_details: { action: alert.action, evidence: alert.evidence, labels: alert.labels },
          },
        };
        let result: DeliveryResult;
        try {
          const response = await postJson(settings.url, body, {}, signal);
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
