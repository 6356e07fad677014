import type { Receiver } from '../route-config.ts';
import type { Channel } from './channel.ts';
import { consoleChannel, recordChannel } from './console.ts';
import { dingtalkChannel } from './dingtalk.ts';
import { emailChannel } from './email.ts';
import { feishuChannel } from './feishu.ts';
import { jiraChannel } from './jira.ts';
import { opsgenieChannel } from './opsgenie.ts';
import { pagerdutyChannel } from './pagerduty.ts';
import { servicenowChannel } from './servicenow.ts';
import { slackChannel } from './slack.ts';
import { webhookChannel } from './webhook.ts';
import { wecomChannel } from './wecom.ts';

export class ReceiverConfigError extends Error {
  readonly code = 'GPUALERT_RECEIVER_INVALID';
}

/** Resolves `env:NAME` settings; a missing variable is one clear error that names it. */
export function resolveSettings(receiver: Receiver, env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(receiver.settings)) {
    const text = String(value);
    if (text.startsWith('env:')) {
      const resolved = env[text.slice(4)];
      if (resolved === undefined || resolved === '') throw new ReceiverConfigError(`receiver "${receiver.name}": ${key} comes from ${text.slice(4)}, which is not set`);
      out[key] = resolved;
    } else {
      out[key] = text;
    }
  }
  return out;
}

function need(receiver: Receiver, settings: Record<string, string>, ...keys: string[]): void {
  for (const key of keys) if (!settings[key]) throw new ReceiverConfigError(`receiver "${receiver.name}" (${receiver.channel}) needs settings.${key}`);
}

/** A fresh channel per configured receiver: one registry, no shared mutable handler objects. */
export function createChannel(receiver: Receiver, env: Readonly<Record<string, string | undefined>>): Channel {
  const s = resolveSettings(receiver, env);
  switch (receiver.channel) {
    case 'slack': need(receiver, s, 'url'); return slackChannel({ url: s.url! });
    case 'feishu': need(receiver, s, 'url'); return feishuChannel({ url: s.url!, ...(s.secret ? { secret: s.secret } : {}) });
    case 'dingtalk': need(receiver, s, 'url'); return dingtalkChannel({ url: s.url!, ...(s.secret ? { secret: s.secret } : {}) });
    case 'wecom': need(receiver, s, 'url'); return wecomChannel({ url: s.url! });
    case 'email': need(receiver, s, 'smtp_url', 'from', 'to'); return emailChannel({ smtp_url: s.smtp_url!, from: s.from!, to: s.to! });
    case 'jira': need(receiver, s, 'url', 'user', 'token', 'project'); return jiraChannel({ url: s.url!, user: s.user!, token: s.token!, project: s.project!, ...(s.issue_type ? { issue_type: s.issue_type } : {}), ...(s.done_transition ? { done_transition: s.done_transition } : {}) });
    case 'servicenow': need(receiver, s, 'url', 'user', 'password'); return servicenowChannel({ url: s.url!, user: s.user!, password: s.password! });
    case 'pagerduty': need(receiver, s, 'url', 'routing_key'); return pagerdutyChannel({ url: s.url!, routing_key: s.routing_key! });
    case 'opsgenie': need(receiver, s, 'url', 'api_key'); return opsgenieChannel({ url: s.url!, api_key: s.api_key! });
    case 'webhook': need(receiver, s, 'url'); return webhookChannel({ url: s.url!, ...(s.secret ? { secret: s.secret } : {}) });
    case 'console': return consoleChannel();
    case 'record': return recordChannel();
  }
}
