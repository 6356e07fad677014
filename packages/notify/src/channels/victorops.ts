import type { CompiledTemplate } from '../go-template.ts';
import { renderFields } from '../render-fields.ts';
import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, postJson } from './channel.ts';
import { fieldOf } from './field-of.ts';
import { oneLine } from './escape.ts';
import { plainText } from './format.ts';
import { cutChars } from './truncate.ts';

/**
 * Splunk On-Call (VictorOps) REST endpoint: `POST {url}{api_key}/{routing_key}`, url by default
 * `https://alert.victorops.com/integrations/generic/20131114/alert/`,
 * with `message_type` (CRITICAL, WARNING, INFO, ACKNOWLEDGEMENT, RECOVERY), `entity_id` (the
 * incident: a RECOVERY with the same id resolves it), `entity_display_name`, `state_message`,
 * `state_start_time` (unix seconds) and `monitoring_tool`; 200 `{"result":"success"}`.
 * Source: Splunk On-Call's REST endpoint integration guide (as Alertmanager's victorops notifier and
 * InfluxData's victorops package use it). It publishes no field lengths: these bounds are gpualert's.
 */
export const VICTOROPS_LIMITS = { entity_id: 512, entity_display_name: 512, state_message: 20_000, monitoring_tool: 100 } as const;

const MESSAGE_TYPE = { critical: 'CRITICAL', error: 'CRITICAL', warning: 'WARNING', info: 'INFO' } as const;

/**
 * One event per alert, `entity_id` = its fingerprint (a second fault opens its own incident, a
 * repeat updates it), RECOVERY when it resolves. `message_type` is the alert's severity unless the
 * receiver names one; Alertmanager's entity_display_name, state_message and monitoring_tool
 * templates fill those fields.
 */
export function victoropsChannel(
  settings: { url: string; api_key: string; routing_key: string; message_type?: string },
  templates?: Readonly<Record<string, CompiledTemplate>>,
): Channel {
  const base = settings.url.endsWith('/') ? settings.url : `${settings.url}/`;
  return {
    name: 'victorops',
    async send(notification, signal) {
      let endpoint: string;
      try {
        endpoint = `${base}${encodeURIComponent(settings.api_key)}/${encodeURIComponent(settings.routing_key)}`;
      } catch {
        return { ok: false, retriable: false, error: 'victorops: the api key or the routing key is not well-formed text' };
      }
      const r = renderFields(templates, notification);
      const own = r?.fields;
      const errors = r?.errors.length ? `\n\n${r.errors.join('\n')}` : '';
      for (const alert of notification.alerts) {
        const event = {
          message_type: alert.status === 'resolved' ? 'RECOVERY' : (settings.message_type ?? MESSAGE_TYPE[alert.severity]),
          entity_id: cutChars(alert.fingerprint, VICTOROPS_LIMITS.entity_id),
          entity_display_name: cutChars(
            oneLine(own?.entity_display_name ?? `[${alert.severity}] ${alert.host}: ${alert.summary}`),
            VICTOROPS_LIMITS.entity_display_name,
          ),
          state_message: cutChars((own?.state_message ?? plainText({ ...notification, alerts: [alert] })) + errors, VICTOROPS_LIMITS.state_message),
          state_start_time: Math.floor(Date.parse(alert.startsAt) / 1000) || undefined,
          monitoring_tool: cutChars(oneLine(own?.monitoring_tool ?? 'gpualert'), VICTOROPS_LIMITS.monitoring_tool),
        };
        let result: DeliveryResult;
        try {
          const response = await postJson(endpoint, event, {}, signal);
          const text = await response.text();
          if (!response.ok) result = httpFailure(response.status, text, response.headers.get('retry-after'));
          else result = victoropsAnswer(text);
        } catch (error) {
          result = networkFailure(error);
        }
        if (!result.ok) return result;
      }
      return { ok: true };
    },
  };
}

/** A 200 says `"result": "success"`; one that says `failure` names why in `message` (a bad key, a malformed event: not healed by a retry). */
export function victoropsAnswer(text: string): DeliveryResult {
  let answer: unknown = null;
  try {
    answer = JSON.parse(text || '{}');
  } catch {
    return { ok: false, retriable: false, error: `victorops: the answer is not JSON: ${text.slice(0, 200)}` };
  }
  const result = fieldOf(answer, 'result');
  return result === 'success'
    ? { ok: true }
    : { ok: false, retriable: false, error: `victorops: ${String(fieldOf(answer, 'message') ?? result ?? 'no result').slice(0, 300)}` };
}
