import type { Receiver } from '../route-config.ts';
import type { Channel } from './channel.ts';
import { channelSettings, isEnvRef } from './channel-settings.ts';
import { consoleChannel, recordChannel } from './console.ts';
import { dingtalkChannel } from './dingtalk.ts';
import { emailChannel } from './email.ts';
import { feishuChannel } from './feishu.ts';
import { jiraChannel, type JiraDeployment } from './jira.ts';
import { opsgenieChannel } from './opsgenie.ts';
import { pagerdutyChannel } from './pagerduty.ts';
import { servicenowChannel } from './servicenow.ts';
import { pushoverChannel } from './pushover.ts';
import { slackChannel } from './slack.ts';
import { victoropsChannel } from './victorops.ts';
import { webhookChannel, type WebhookFormat } from './webhook.ts';
import { wecomChannel } from './wecom.ts';
import { GpualertError } from '@gpualert/schema';

export class ReceiverConfigError extends GpualertError {
  constructor(message: string) { super('GA-RECEIVER-INVALID', message); }
}

/** Resolves `env:NAME` settings; a missing variable is one clear error that names it. */
export function resolveSettings(receiver: Receiver, env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, value] of Object.entries(receiver.settings)) {
    const text = String(value);
    if (isEnvRef(text)) {
      const resolved = env[text.slice(4)];
      if (resolved === undefined || resolved === '') throw new ReceiverConfigError(`receiver "${receiver.name}": ${key} comes from ${text.slice(4)}, which is not set`);
      out[key] = resolved;
    } else {
      out[key] = text;
    }
  }
  return out;
}

/**
 * The resolved settings checked against the channel's schema, as at load but with the environment's
 * values in: one line naming the receiver, the setting and the variable it came from, never the value.
 */
function checkedSettings(receiver: Receiver, env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const resolved = resolveSettings(receiver, env);
  const checked = channelSettings(receiver.channel, false).safeParse(resolved);
  if (checked.success) return checked.data;
  const issue = checked.error.issues[0]!;
  const key = String(issue.path[0] ?? '');
  const raw = Object.hasOwn(receiver.settings, key) ? String(receiver.settings[key]) : '';
  const from = isEnvRef(raw) ? ` (from ${raw.slice(4)})` : '';
  throw new ReceiverConfigError(`receiver "${receiver.name}" (${receiver.channel}): settings.${key}${from}: ${issue.message}`);
}

/** A fresh channel per configured receiver: one registry, no shared mutable handler objects. */
export function createChannel(receiver: Receiver, env: Readonly<Record<string, string | undefined>>): Channel {
  const s = checkedSettings(receiver, env);
  switch (receiver.channel) {
    case 'slack': return slackChannel({ url: s.url!, ...(s.channel ? { channel: s.channel } : {}), ...(s.icon_url ? { icon_url: s.icon_url } : {}), ...(s.image_url ? { image_url: s.image_url } : {}) }, receiver.compiled);
    case 'feishu': return feishuChannel({ url: s.url!, ...(s.secret ? { secret: s.secret } : {}) });
    case 'dingtalk': return dingtalkChannel({ url: s.url!, ...(s.secret ? { secret: s.secret } : {}) });
    case 'wecom': return wecomChannel({ url: s.url! });
    case 'email': return emailChannel({ smtp_url: s.smtp_url!, from: s.from!, to: s.to! }, receiver.compiled);
    case 'jira': return jiraChannel({ url: s.url!, user: s.user!, token: s.token!, project: s.project!, ...(s.issue_type ? { issue_type: s.issue_type } : {}), ...(s.done_transition ? { done_transition: s.done_transition } : {}), ...(s.deployment ? { deployment: s.deployment as JiraDeployment | 'auto' } : {}) });
    case 'servicenow': return servicenowChannel({ url: s.url!, user: s.user!, password: s.password!, ...(s.close_code ? { close_code: s.close_code } : {}) });
    case 'pagerduty': return pagerdutyChannel(s.service_key ? { url: s.url!, service_key: s.service_key } : { url: s.url!, routing_key: s.routing_key ?? '' }, receiver.compiled);
    case 'opsgenie': return opsgenieChannel({ url: s.url!, api_key: s.api_key! }, receiver.compiled);
    case 'victorops': return victoropsChannel({ url: s.url!, api_key: s.api_key!, routing_key: s.routing_key!, ...(s.message_type ? { message_type: s.message_type } : {}) }, receiver.compiled);
    case 'pushover': return pushoverChannel({ url: s.url!, token: s.token!, user_key: s.user_key!, ...(s.priority ? { priority: s.priority } : {}), ...(s.sound ? { sound: s.sound } : {}), ...(s.device ? { device: s.device } : {}) });
    case 'webhook': return webhookChannel({ url: s.url!, ...(s.secret ? { secret: s.secret } : {}), ...(s.format ? { format: s.format as WebhookFormat } : {}), ...(s.max_alerts ? { max_alerts: Number(s.max_alerts) } : {}) });
    case 'console': return consoleChannel();
    case 'record': return recordChannel();
  }
}
