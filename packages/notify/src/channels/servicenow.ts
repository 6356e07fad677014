import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, sendSignal } from './channel.ts';
import { fieldOf } from './field-of.ts';
import { oneLine } from './escape.ts';
import { plainText } from './format.ts';
import { cutChars } from './truncate.ts';

const URGENCY = { critical: '1', error: '2', warning: '3', info: '3' } as const;

/**
 * `incident.short_description` is a 160-character string field.
 * Source: https://www.servicenow.com/docs/ (Incident [incident] table, short_description max length 160)
 */
export const SERVICENOW_SHORT_DESCRIPTION_MAX_CHARS = 160;
/** `description` and work notes: 4,000 characters is the default max length of the incident's description field. Same source. */
export const SERVICENOW_TEXT_MAX_CHARS = 4000;
/**
 * The close code when none is configured: "Solution provided" is in the default incident
 * close-code choice list of current releases ("Solved (Permanently)" no longer is). Close codes
 * differ per instance, hence the `close_code` setting.
 * Source: https://www.servicenow.com/docs/r/it-service-management/incident-management/resolve-and-close-an-incident.html
 */
export const SERVICENOW_DEFAULT_CLOSE_CODE = 'Solution provided';

/**
 * `cmdb_ci` is a reference: it stores a sys_id. A host name only lands there with
 * `sysparm_input_display_value=true`, which makes ServiceNow look the name up.
 * Source: https://www.servicenow.com/docs/r/api-reference/rest-apis/c_TableAPI.html (sysparm_input_display_value)
 */
const CREATE_QUERY = '?sysparm_input_display_value=true';

/** ServiceNow incidents: created with `correlation_id` = fingerprint, updated by it, resolved with state 6. */
export function servicenowChannel(settings: { url: string; user: string; password: string; close_code?: string }): Channel {
  const base = settings.url.replace(/\/$/, '');
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json',
    authorization: `Basic ${Buffer.from(`${settings.user}:${settings.password}`).toString('base64')}`,
  };
  const callWith = (signal: AbortSignal | undefined) => async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: sendSignal(signal),
    });
    const text = await response.text();
    let json: { result?: unknown } = {};
    try {
      json = (text ? JSON.parse(text) : {}) as { result?: unknown };
    } catch {
      json = { result: text.slice(0, 300) };
    }
    return { response, json };
  };
  return {
    name: 'servicenow',
    async send(notification, signal) {
      const call = callWith(signal);
      try {
        for (const alert of notification.alerts) {
          // `^` separates terms of an encoded query: a value carrying one could add terms of its own.
          const correlation = alert.fingerprint.replace(/\^/g, '');
          const found = await call(
            'GET',
            `/api/now/table/incident?sysparm_query=${encodeURIComponent(`correlation_id=${correlation}^active=true`)}&sysparm_limit=1&sysparm_fields=sys_id`,
          );
          if (!found.response.ok) return httpFailure(found.response.status, JSON.stringify(found.json), found.response.headers.get('retry-after'));
          const first: unknown = Array.isArray(found.json.result) ? found.json.result[0] : undefined;
          const sysId = fieldOf(first, 'sys_id');
          const existing = typeof sysId === 'string' ? sysId : undefined;
          let answer: Awaited<ReturnType<typeof call>> | undefined;
          if (alert.status === 'resolved') {
            if (existing)
              answer = await call('PATCH', `/api/now/table/incident/${encodeURIComponent(existing)}`, {
                state: '6',
                close_code: settings.close_code ?? SERVICENOW_DEFAULT_CLOSE_CODE,
                close_notes: cutChars(`gpualert: ${oneLine(alert.summary)}`, SERVICENOW_TEXT_MAX_CHARS),
              });
          } else if (existing) {
            answer = await call('PATCH', `/api/now/table/incident/${encodeURIComponent(existing)}`, {
              work_notes: cutChars(`${notification.reason}: ${oneLine(alert.summary)}`, SERVICENOW_TEXT_MAX_CHARS),
              urgency: URGENCY[alert.severity],
            });
          } else {
            answer = await call('POST', `/api/now/table/incident${CREATE_QUERY}`, {
              short_description: cutChars(oneLine(`[${alert.severity}] ${alert.host}: ${alert.summary}`), SERVICENOW_SHORT_DESCRIPTION_MAX_CHARS),
              description: cutChars(plainText({ ...notification, alerts: [alert] }), SERVICENOW_TEXT_MAX_CHARS),
              urgency: URGENCY[alert.severity],
              impact: URGENCY[alert.severity],
              cmdb_ci: oneLine(alert.host),
              correlation_id: correlation,
            });
          }
          if (answer && !answer.response.ok) {
            const result: DeliveryResult = httpFailure(answer.response.status, JSON.stringify(answer.json), answer.response.headers.get('retry-after'));
            return result;
          }
        }
        return { ok: true };
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
