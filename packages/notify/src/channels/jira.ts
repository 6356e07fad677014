import type { Channel, DeliveryResult } from './channel.ts';
import { httpFailure, networkFailure, sendSignal } from './channel.ts';
import { escapeJiraWiki, jqlString, oneLine } from './escape.ts';
import { plainText } from './format.ts';
import { cutChars } from './truncate.ts';
import { z } from 'zod';

/**
 * `summary`: at most 255 characters and no line breaks (Jira answers 400 otherwise).
 * Source: https://support.atlassian.com/jira-cloud-administration/docs/what-are-the-field-limits-in-jira/ (summary 255)
 */
export const JIRA_SUMMARY_MAX_CHARS = 255;
/** A text field (description, comment): 32,767 characters. Same source. */
export const JIRA_TEXT_MAX_CHARS = 32_767;
/** A label: at most 255 characters, no spaces. Same source. */
export const JIRA_LABEL_MAX_CHARS = 255;

/** The parts of Jira's answers read here; anything else in them is ignored, and an answer of another shape reads as empty. */
const ServerInfo = z.looseObject({ deploymentType: z.string().optional() }).catch({});
const IssueSearch = z.looseObject({ issues: z.array(z.looseObject({ key: z.string() })).optional() }).catch({});
const Transitions = z.looseObject({ transitions: z.array(z.looseObject({ id: z.string(), name: z.string() })).optional() }).catch({});

export type JiraDeployment = 'cloud' | 'datacenter';
export const JIRA_DEPLOYMENTS = ['cloud', 'datacenter', 'auto'] as const;

interface JiraApi {
  readonly deployment: JiraDeployment;
  /** Jira Cloud: REST v3, search at `/search/jql` (the old `/search` answers 410), text as ADF. Data Center: REST v2, `/search`, wiki text. */
  readonly base: '/rest/api/3' | '/rest/api/2';
  readonly searchPath: string;
  readonly text: (text: string) => unknown;
}

/**
 * Atlassian Document Format: one paragraph per line (a text node holds no line break and is
 * never empty). Source: https://developer.atlassian.com/cloud/jira/platform/apis/document/structure/
 */
export function adfDocument(text: string): { type: 'doc'; version: 1; content: { type: 'paragraph'; content: { type: 'text'; text: string }[] }[] } {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return {
    type: 'doc',
    version: 1,
    content: (lines.length > 0 ? lines : ['—']).map((line) => ({ type: 'paragraph', content: [{ type: 'text', text: line }] })),
  };
}

/**
 * Jira Cloud removed `GET /rest/api/{2,3}/search` (410) for `/rest/api/3/search/jql`; Data
 * Center keeps `/rest/api/2/search`. Source: https://developer.atlassian.com/changelog/#CHANGE-2046
 */
export function jiraApi(deployment: JiraDeployment): JiraApi {
  return deployment === 'cloud'
    ? { deployment, base: '/rest/api/3', searchPath: '/rest/api/3/search/jql', text: (t) => adfDocument(cutChars(t, JIRA_TEXT_MAX_CHARS)) }
    : { deployment, base: '/rest/api/2', searchPath: '/rest/api/2/search', text: (t) => cutChars(escapeJiraWiki(t), JIRA_TEXT_MAX_CHARS) };
}

/** The stable label an alert's issue is found again by: one token, no spaces, within Jira's label limit. */
export function jiraLabel(fingerprint: string): string {
  return cutChars(`gpualert-${oneLine(fingerprint).replace(/\s+/g, '_')}`, JIRA_LABEL_MAX_CHARS);
}

/**
 * Jira: one issue per alert, found again by a stable label `gpualert-<fingerprint>` so a repeat
 * comments instead of duplicating; resolved by transition. Cloud or Data Center as configured,
 * or (`auto`) as `/rest/api/2/serverInfo` says (`deploymentType` "Cloud"), asked once.
 */
export function jiraChannel(settings: {
  url: string;
  user: string;
  token: string;
  project: string;
  issue_type?: string;
  done_transition?: string;
  deployment?: JiraDeployment | 'auto';
}): Channel {
  const base = settings.url.replace(/\/$/, '');
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json',
    authorization: `Basic ${Buffer.from(`${settings.user}:${settings.token}`).toString('base64')}`,
  };
  const host = URL.canParse(base) ? new URL(base).hostname : '';
  const configured =
    settings.deployment && settings.deployment !== 'auto' ? settings.deployment : /\.(atlassian\.net|jira\.com)$/i.test(host) ? 'cloud' : undefined;
  let api: JiraApi | undefined = configured ? jiraApi(configured) : undefined;
  const callWith =
    (signal: AbortSignal | undefined) =>
    async (method: string, path: string, body?: unknown): Promise<{ response: Response; json: unknown }> => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: sendSignal(signal),
      });
      const text = await response.text();
      let json: unknown = {};
      try {
        json = text ? JSON.parse(text) : {};
      } catch {
        json = { text: text.slice(0, 300) };
      }
      return { response, json };
    };
  const fail = (response: Response, json: unknown) => httpFailure(response.status, JSON.stringify(json), response.headers.get('retry-after'));
  return {
    name: 'jira',
    async send(notification, signal) {
      const call = callWith(signal);
      try {
        if (!api) {
          const info = await call('GET', '/rest/api/2/serverInfo');
          if (!info.response.ok) return fail(info.response, info.json);
          api = jiraApi(ServerInfo.parse(info.json).deploymentType === 'Cloud' ? 'cloud' : 'datacenter');
        }
        for (const alert of notification.alerts) {
          const label = jiraLabel(alert.fingerprint);
          const jql = encodeURIComponent(`labels = ${jqlString(label)} AND statusCategory != Done`);
          let search = await call('GET', `${api.searchPath}?jql=${jql}&fields=key&maxResults=1`);
          if (search.response.status === 410 && api.deployment === 'datacenter') {
            // Taken for Data Center but it is Cloud (the old search is gone there): switch, once.
            api = jiraApi('cloud');
            search = await call('GET', `${api.searchPath}?jql=${jql}&fields=key&maxResults=1`);
          }
          if (!search.response.ok) return fail(search.response, search.json);
          const open = IssueSearch.parse(search.json).issues?.[0]?.key;
          const apiBase = api.base;
          const issuePath = (key: string) => `${apiBase}/issue/${encodeURIComponent(key)}`;
          let result: DeliveryResult = { ok: true };
          if (alert.status === 'resolved') {
            if (!open) continue;
            const comment = await call('POST', `${issuePath(open)}/comment`, { body: api.text(`Resolved: ${oneLine(alert.summary)}`) });
            if (!comment.response.ok) return fail(comment.response, comment.json);
            const transitions = await call('GET', `${issuePath(open)}/transitions`);
            if (!transitions.response.ok) return fail(transitions.response, transitions.json);
            const wanted = (settings.done_transition ?? 'Done').toLowerCase();
            const done = Transitions.parse(transitions.json).transitions?.find((t) => t.name.toLowerCase() === wanted);
            if (!done) return { ok: false, retriable: false, error: `jira: no "${settings.done_transition ?? 'Done'}" transition for ${open}` };
            const moved = await call('POST', `${issuePath(open)}/transitions`, { transition: { id: done.id } });
            if (!moved.response.ok) result = fail(moved.response, moved.json);
          } else if (open) {
            const comment = await call('POST', `${issuePath(open)}/comment`, {
              body: api.text(`${notification.reason}: ${oneLine(alert.summary)} (${alert.severity})`),
            });
            if (!comment.response.ok) result = fail(comment.response, comment.json);
          } else {
            const created = await call('POST', `${api.base}/issue`, {
              fields: {
                project: { key: settings.project },
                summary: cutChars(oneLine(`[${alert.severity}] ${alert.host}: ${alert.summary}`), JIRA_SUMMARY_MAX_CHARS),
                description: api.text(plainText({ ...notification, alerts: [alert] })),
                issuetype: { name: settings.issue_type ?? 'Task' },
                labels: ['gpualert', label],
                priority: { name: alert.severity === 'critical' ? 'Highest' : alert.severity === 'error' ? 'High' : 'Medium' },
              },
            });
            if (!created.response.ok) result = fail(created.response, created.json);
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
