import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, sendSignal } from './channel.ts';
import { plainText } from './format.ts';

/**
 * Jira (REST v2): one issue per alert, found again by a stable label `gpualert-<fingerprint>`
 * so a repeat comments instead of duplicating; resolved by transition.
 */
export function jiraChannel(settings: { url: string; user: string; token: string; project: string; issue_type?: string; done_transition?: string }): Channel {
  const base = settings.url.replace(/\/$/, '');
  const headers = { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${settings.user}:${settings.token}`).toString('base64')}` };
  const callWith = (signal: AbortSignal | undefined) => async (method: string, path: string, body?: unknown): Promise<{ response: Response; json: unknown }> => {
    const response = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: sendSignal(signal) });
    const text = await response.text();
    return { response, json: text ? (JSON.parse(text) as unknown) : {} };
  };
  const fail = async (response: Response, json: unknown) => httpFailure(response.status, JSON.stringify(json), response.headers.get('retry-after'));
  return {
    name: 'jira',
    async send(notification, signal) {
      const call = callWith(signal);
      try {
        for (const alert of notification.alerts) {
          const label = `gpualert-${alert.fingerprint}`;
          const search = await call('GET', `/rest/api/2/search?jql=${encodeURIComponent(`labels = "${label}" AND statusCategory != Done`)}&fields=key`);
          if (!search.response.ok) return fail(search.response, search.json);
          const open = (search.json as { issues?: { key: string }[] }).issues?.[0]?.key;
          let result: DeliveryResult = { ok: true };
          if (alert.status === 'resolved') {
            if (!open) continue;
            await call('POST', `/rest/api/2/issue/${open}/comment`, { body: `Resolved: ${alert.summary}` });
            const transitions = await call('GET', `/rest/api/2/issue/${open}/transitions`);
            const wanted = (settings.done_transition ?? 'Done').toLowerCase();
            const done = (transitions.json as { transitions?: { id: string; name: string }[] }).transitions?.find((t) => t.name.toLowerCase() === wanted);
            if (!done) return { ok: false, retriable: false, error: `jira: no "${settings.done_transition ?? 'Done'}" transition for ${open}` };
            const moved = await call('POST', `/rest/api/2/issue/${open}/transitions`, { transition: { id: done.id } });
            if (!moved.response.ok) result = await fail(moved.response, moved.json);
          } else if (open) {
            const comment = await call('POST', `/rest/api/2/issue/${open}/comment`, { body: `${notification.reason}: ${alert.summary} (${alert.severity})` });
            if (!comment.response.ok) result = await fail(comment.response, comment.json);
          } else {
            const created = await call('POST', '/rest/api/2/issue', {
              fields: {
                project: { key: settings.project }, summary: `[${alert.severity}] ${alert.host}: ${alert.summary}`.slice(0, 250),
                description: plainText({ ...notification, alerts: [alert] }), issuetype: { name: settings.issue_type ?? 'Task' },
                labels: ['gpualert', label], priority: { name: alert.severity === 'critical' ? 'Highest' : alert.severity === 'error' ? 'High' : 'Medium' },
              },
            });
            if (!created.response.ok) result = await fail(created.response, created.json);
          }
          if (!result.ok) return result;
        }
        return { ok: true };
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
