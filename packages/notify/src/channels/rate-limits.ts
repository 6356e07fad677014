import type { ChannelName } from './channel-settings.ts';

/** How fast one destination takes messages: at most `perSecond` in any second and `perMinute` in any minute. */
export interface RateLimit {
  readonly perSecond?: number;
  readonly perMinute?: number;
}

/**
 * Each vendor's documented rate per destination (webhook, bot, routing key). Where a vendor
 * publishes none (ServiceNow, Jira, Opsgenie: per instance or per plan) the limit is its 429.
 */
export const VENDOR_RATE_LIMITS: Readonly<Record<ChannelName, RateLimit | undefined>> = {
  // "1 message per second per channel", short bursts tolerated. https://api.slack.com/docs/rate-limits#incoming-webhooks
  slack: { perSecond: 1, perMinute: 60 },
  // 100 a minute and 5 a second per custom bot. https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
  feishu: { perSecond: 5, perMinute: 100 },
  // 20 a minute per robot, then 10 minutes blocked. https://open.dingtalk.com/document/orgapp/custom-robot-access
  dingtalk: { perMinute: 20 },
  // 20 a minute per robot. https://developer.work.weixin.qq.com/document/path/91770
  wecom: { perMinute: 20 },
  // About 120 events a minute per routing key (https://developer.pagerduty.com/docs/events-api-v2-overview#api-limits),
  // but a page is never held back here: over the limit PagerDuty answers 429, which is retried with backoff.
  pagerduty: undefined,
  opsgenie: undefined,
  victorops: undefined,
  pushover: undefined,
  jira: undefined,
  servicenow: undefined,
  email: undefined,
  webhook: undefined,
  console: undefined,
  record: undefined,
};

/** A receiver's limit: its own `per_second`/`per_minute` where set, else its vendor's. */
export function rateLimitOf(receiver: { channel: ChannelName; per_minute?: number | undefined; per_second?: number | undefined }): RateLimit | undefined {
  const vendor = VENDOR_RATE_LIMITS[receiver.channel];
  const perSecond = receiver.per_second ?? vendor?.perSecond;
  const perMinute = receiver.per_minute ?? vendor?.perMinute;
  if (perSecond === undefined && perMinute === undefined) return undefined;
  return { ...(perSecond !== undefined ? { perSecond } : {}), ...(perMinute !== undefined ? { perMinute } : {}) };
}
