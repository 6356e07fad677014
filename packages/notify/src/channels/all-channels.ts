import type { ChannelDescriptor } from './channel-descriptor.ts';
import { consoleDescriptor } from './console.descriptor.ts';
import { dingtalkDescriptor } from './dingtalk.descriptor.ts';
import { emailDescriptor } from './email.descriptor.ts';
import { feishuDescriptor } from './feishu.descriptor.ts';
import { jiraDescriptor } from './jira.descriptor.ts';
import { opsgenieDescriptor } from './opsgenie.descriptor.ts';
import { pagerdutyDescriptor } from './pagerduty.descriptor.ts';
import { pushoverDescriptor } from './pushover.descriptor.ts';
import { recordDescriptor } from './record.descriptor.ts';
import { servicenowDescriptor } from './servicenow.descriptor.ts';
import { slackDescriptor } from './slack.descriptor.ts';
import { victoropsDescriptor } from './victorops.descriptor.ts';
import { webhookDescriptor } from './webhook.descriptor.ts';
import { wecomDescriptor } from './wecom.descriptor.ts';

/**
 * Every channel gpualert sends to, one descriptor each (`<name>.descriptor.ts`). The registry, the
 * settings' validation and Alertmanager's receivers are read from this list: a new channel is its
 * descriptor file and one line here (all-channels.test.ts holds the list to the files).
 */
export const ALL_CHANNELS = [
  slackDescriptor,
  feishuDescriptor,
  dingtalkDescriptor,
  wecomDescriptor,
  emailDescriptor,
  jiraDescriptor,
  servicenowDescriptor,
  pagerdutyDescriptor,
  opsgenieDescriptor,
  victoropsDescriptor,
  pushoverDescriptor,
  webhookDescriptor,
  consoleDescriptor,
  recordDescriptor,
] as const;

/** The name a receiver's `channel:` gives. */
export type ChannelName = (typeof ALL_CHANNELS)[number]['name'];

/** The channels' names, in the list's order (for the route file's `channel:`). */
export const CHANNELS: readonly ChannelName[] = ALL_CHANNELS.map((d) => d.name);

const BY_NAME: ReadonlyMap<string, ChannelDescriptor<ChannelName>> = new Map(ALL_CHANNELS.map((d) => [d.name, d]));

/** The descriptor of a channel the route file named (a name from CHANNELS). */
export function descriptorOf(name: ChannelName): ChannelDescriptor<ChannelName> {
  const descriptor = BY_NAME.get(name);
  if (!descriptor) throw new Error(`bug: channel "${name}" is not in all-channels.ts`);
  return descriptor;
}
