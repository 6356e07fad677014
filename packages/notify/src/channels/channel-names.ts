/** Every channel gpualert sends to, by the name a receiver's `channel:` gives. It imports nothing: any file may name a channel. */
export const CHANNELS = ['slack', 'feishu', 'dingtalk', 'wecom', 'email', 'jira', 'servicenow', 'pagerduty', 'opsgenie', 'victorops', 'pushover', 'webhook', 'console', 'record'] as const;
export type ChannelName = (typeof CHANNELS)[number];
