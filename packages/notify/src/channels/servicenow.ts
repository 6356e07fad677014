import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, sendSignal } from './channel.ts';
import { plainText } from './format.ts';

const URGENCY = { critical: '1', error: '2', warning: '3', info: '3' } as const;

/** ServiceNow incidents: created with `correlation_id` = fingerprint, updated by it, resolved with state 6. */
export function servicenowChannel(settings: { url: string; user: string; password: string }): Channel {
  const base = settings.url.replace(/\/$/, '');
  const headers = { 'content-type': 'application/json', accept: 'application/json', authorization: `Basic ${Buffer.from(`${settings.user}:${settings.password}`).toString('base64')}` };
  const callWith = (signal: AbortSignal | undefined) => async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: sendSignal(signal) });
    const text = await response.text();
    return { response, json: (text ? JSON.parse(text) : {}) as { result?: unknown } };
  };
  return {
    name: 'servicenow',
    async send(notification, signal) {
      const call = callWith(signal);
      try {
        for (const alert of notification.alerts) {
          const found = await call('GET', `/api/now/table/incident?sysparm_query=${encodeURIComponent(`correlation_id=${alert.fingerprint}^active=true`)}&sysparm_limit=1`);
          if (!found.response.ok) return httpFailure(found.response.status, JSON.stringify(found.json), found.response.headers.get('retry-after'));
          const existing = (found.json.result as { sys_id: string }[] | undefined)?.[0]?.sys_id;
          let answer: Awaited<ReturnType<typeof call>> | undefined;
          if (alert.status === 'resolved') {
            if (existing) answer = await call('PATCH', `/api/now/table/incident/${existing}`, { state: '6', close_code: 'Solved (Permanently)', close_notes: `gpualert: ${alert.summary}` });
          } else if (existing) {
            answer = await call('PATCH', `/api/now/table/incident/${existing}`, { work_notes: `${notification.reason}: ${alert.summary}`, urgency: URGENCY[alert.severity] });
          } else {
            answer = await call('POST', '/api/now/table/incident', {
              short_description: `[${alert.severity}] ${alert.host}: ${alert.summary}`.slice(0, 160), description: plainText({ ...notification, alerts: [alert] }),
              urgency: URGENCY[alert.severity], impact: URGENCY[alert.severity], cmdb_ci: alert.host, correlation_id: alert.fingerprint,
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
