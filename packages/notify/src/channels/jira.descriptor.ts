import { defineChannel } from './channel-descriptor.ts';
import { JIRA_DEPLOYMENTS, JIRA_LABEL_MAX_CHARS, JIRA_SUMMARY_MAX_CHARS, JIRA_TEXT_MAX_CHARS, jiraChannel } from './jira.ts';
import { mayOneOf, mayText, needText, needUrl } from './setting-fields.ts';

/** Jira Cloud or Data Center, one issue per alert; `jira_configs` in an Alertmanager file takes these settings. */
export const jiraDescriptor = defineChannel({
  name: 'jira',
  settings: {
    url: needUrl,
    user: needText,
    token: needText,
    project: needText,
    issue_type: mayText,
    done_transition: mayText,
    deployment: mayOneOf(JIRA_DEPLOYMENTS),
  },
  // None published (per instance or per plan): the limit is its 429.
  sizeLimits: [
    { part: 'summary', max: JIRA_SUMMARY_MAX_CHARS, unit: 'characters' },
    { part: 'description and comments', max: JIRA_TEXT_MAX_CHARS, unit: 'characters' },
    { part: 'label', max: JIRA_LABEL_MAX_CHARS, unit: 'characters' },
  ],
  create: (s) =>
    jiraChannel({
      url: s.url,
      user: s.user,
      token: s.token,
      project: s.project,
      ...(s.issue_type ? { issue_type: s.issue_type } : {}),
      ...(s.done_transition ? { done_transition: s.done_transition } : {}),
      ...(s.deployment ? { deployment: s.deployment } : {}),
    }),
});
