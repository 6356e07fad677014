import type { z } from 'zod';
import { ALL_CHANNELS, descriptorOf, type ChannelName } from './all-channels.ts';
import type { SettingFields } from './setting-fields.ts';

/** The channels a receiver can use (all-channels.ts), for the settings schemas and the route file alike. */
export { CHANNELS, type ChannelName } from './all-channels.ts';
export { isEnvRef, MAX_SETTING_LENGTH, urlProblem } from './setting-fields.ts';

/** Each channel's settings: which keys it needs, which it may take, and how each is checked (from its descriptor). */
export const CHANNEL_SETTINGS: ReadonlyMap<ChannelName, SettingFields> = new Map(ALL_CHANNELS.map((d) => [d.name, d.settings.fields]));

/**
 * A channel's settings as a zod schema. At load a value may be `env:NAME` (read at start); at start
 * the resolved values are checked again with `allowEnv: false`.
 */
export function channelSettings(channel: ChannelName, allowEnv: boolean): z.ZodType<Record<string, string>> {
  const { settings } = descriptorOf(channel);
  return allowEnv ? settings.atLoad : settings.resolved;
}
