import { COMMON_SOURCES, CommonConfig, listenSetting, portSetting, tokenSetting } from '@gpualert/config';
import { DEFAULT_ROUTES } from '@gpualert/notify';
import { z } from 'zod';
import { commandSettings } from './command-settings.ts';

/** The notifier's API port when neither a flag nor GPUALERT_NOTIFIER_PORT says: Alertmanager's 9093 is often taken beside it. */
export const DEFAULT_NOTIFIER_PORT = 9095;

/** What the notifier's own settings are, wherever it runs (`gpualert notifier`, or inside `up` as `notifier…`). */
export const NOTIFIER_SHAPE = {
  port: portSetting.default(DEFAULT_NOTIFIER_PORT),
  listen: listenSetting.default('0.0.0.0'),
  /** The API's bearer token; none: the API takes no request (Alertmanager's v2, the silences). */
  token: tokenSetting.optional(),
};
export const NOTIFIER_SOURCES = {
  port: { env: 'GPUALERT_NOTIFIER_PORT' },
  listen: { env: 'GPUALERT_NOTIFIER_LISTEN' },
  token: { env: 'GPUALERT_NOTIFIER_TOKEN', flag: false, secret: true },
} as const;

/** `gpualert notifier`: routes, the console's rules, where its API listens and its token. */
export const NOTIFIER_SETTINGS = commandSettings({
  command: 'notifier',
  schema: CommonConfig.extend({
    routes: z.string().min(1).default(DEFAULT_ROUTES),
    rules: z.string().min(1).optional(),
    ...NOTIFIER_SHAPE,
  }),
  sources: { ...COMMON_SOURCES, routes: { env: 'GPUALERT_ROUTES' }, rules: {}, ...NOTIFIER_SOURCES },
});

/** `routes test|show` and `rules check`: the routes file alone. */
export const ROUTES_SETTINGS = commandSettings({
  command: 'routes',
  schema: z.object({ routes: z.string().min(1).default(DEFAULT_ROUTES) }),
  sources: { routes: { env: 'GPUALERT_ROUTES' } },
});
