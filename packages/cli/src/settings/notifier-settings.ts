import { COMMON_SOURCES, CommonConfig, listenSetting, listSetting, portSetting, tokenSetting } from '@gpualert/config';
import { DEFAULT_ROUTES } from '@gpualert/notify';
import { MAX_FLEET_SOURCES } from '@gpualert/schema';
import { z } from 'zod';
import { commandSettings } from './command-settings.ts';
import { unitMs } from '../duration.ts';

/** A replica's name: a StatefulSet pod's name, a host name; it names the replica's own keys and consumer group. */
export const replicaSetting = z
  .string()
  .min(1)
  .max(63)
  .regex(
    /^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/,
    'expected a name of lower-case letters, digits, dots, dashes and underscores (a pod name, such as gpualert-notifier-0)',
  );

/** How long each replica waits for the ones before it: 1s to 5m, as `15s`, `500ms`, `1m`. */
export const peerTimeoutSetting = z.string().transform((text, context) => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text.trim());
  const ms = match ? Math.round(Number(match[1]) * unitMs(match[2])) : Number.NaN;
  if (!(ms >= 1_000 && ms <= 300_000)) {
    context.addIssue({ code: 'custom', message: 'expected a duration from 1s to 5m, such as 15s' });
    return z.NEVER;
  }
  return ms;
});

/** An engine's console endpoint: its `/metrics` port's base URL, http or https, such as http://gpualert-engine-0:9470. */
export const engineUrlSetting = z
  .string()
  .max(2_048)
  .refine((text) => {
    try {
      // `dns+http://name:9470`: every address of the name is an engine (a headless Service's pods).
      const url = new URL(text.startsWith('dns+') ? text.slice(4) : text);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
    } catch {
      return false;
    }
  }, "expected http(s) URLs of the engines' port, without a user, query or fragment, such as http://gpualert-engine-0:9470, or dns+http://gpualert-engine:9470 for every address of a name");

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
    /** A replica of a notifier cluster (Alertmanager's HA model); none: the notifier shares the alerts' partitions with any other. */
    replica: replicaSetting.optional(),
    peerTimeout: peerTimeoutSetting.default(15_000),
    /** The engines the console asks for the fleet's values, baselines and history (each serves the hosts it owns); none: the hosts the engines saved to the store, without values. */
    engines: listSetting(engineUrlSetting)
      .refine((list) => list.length <= MAX_FLEET_SOURCES, `expected at most ${MAX_FLEET_SOURCES} engines`)
      .optional(),
  }),
  sources: {
    ...COMMON_SOURCES,
    routes: { env: 'GPUALERT_ROUTES' },
    rules: {},
    ...NOTIFIER_SOURCES,
    replica: { env: 'GPUALERT_NOTIFIER_REPLICA' },
    peerTimeout: { env: 'GPUALERT_NOTIFIER_PEER_TIMEOUT' },
    engines: { env: 'GPUALERT_NOTIFIER_ENGINES' },
  },
});

/** `routes test|show` and `rules check`: the routes file alone. */
export const ROUTES_SETTINGS = commandSettings({
  command: 'routes',
  schema: z.object({ routes: z.string().min(1).default(DEFAULT_ROUTES) }),
  sources: { routes: { env: 'GPUALERT_ROUTES' } },
});
