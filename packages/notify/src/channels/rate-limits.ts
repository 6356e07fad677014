import { ALL_CHANNELS, descriptorOf, type ChannelName } from './all-channels.ts';
import type { RateLimit } from './channel-descriptor.ts';

export type { RateLimit } from './channel-descriptor.ts';

/**
 * Each vendor's documented rate per destination (webhook, bot, routing key), from its descriptor.
 * Where a vendor publishes none (ServiceNow, Jira, Opsgenie: per instance or per plan) the limit is its 429.
 */
export const VENDOR_RATE_LIMITS: ReadonlyMap<ChannelName, RateLimit | undefined> = new Map(ALL_CHANNELS.map((d) => [d.name, d.rateLimit]));

/** A receiver's limit: its own `per_second`/`per_minute` where set, else its vendor's. */
export function rateLimitOf(receiver: { channel: ChannelName; per_minute?: number | undefined; per_second?: number | undefined }): RateLimit | undefined {
  const vendor = descriptorOf(receiver.channel).rateLimit;
  const perSecond = receiver.per_second ?? vendor?.perSecond;
  const perMinute = receiver.per_minute ?? vendor?.perMinute;
  if (perSecond === undefined && perMinute === undefined) return undefined;
  return { ...(perSecond !== undefined ? { perSecond } : {}), ...(perMinute !== undefined ? { perMinute } : {}) };
}
