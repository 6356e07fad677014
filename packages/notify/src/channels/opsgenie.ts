import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';

const PRIORITY = { critical: 'P1', error: 'P2', warning: 'P3', info: 'P5' } as const;

/** Opsgenie: `alias` = fingerprint as the dedup key, `message` ≤ 130 characters; close by alias. */
export function opsgenieChannel(settings: { url: string; api_key: string }): Channel {
  const base = settings.url.replace(/\/$/, '');
  return {
    name: 'opsgenie',
    async send(notification, signal) {
      const headers = { authorization: `GenieKey ${settings.api_key}` };
      for (const alert of notification.alerts) {
        let result: DeliveryResult;
        try {
          const response = alert.status === 'resolved'
            ? await postJson(`${base}/v2/alerts/${encodeURIComponent(alert.fingerprint)}/close?identifierType=alias`, { source: 'gpualert', note: 'resolved' }, headers, signal)
            : await postJson(`${base}/v2/alerts`, {
                message: alert.summary.slice(0, 130), alias: alert.fingerprint, description: [alert.summary, alert.action ?? ''].join('\n'),
                priority: PRIORITY[alert.severity], source: 'gpualert', entity: alert.host, tags: [alert.category, alert.severity],
              }, headers, signal);
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
