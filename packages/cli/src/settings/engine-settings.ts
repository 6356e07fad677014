import { COMMON_SOURCES, CommonConfig, listenSetting, portSetting } from '@gpualert/config';
import { parseForgetAfter } from '@gpualert/engine';
import { DEFAULT_ENGINE_PORT } from '@gpualert/engine-service';
import { z } from 'zod';
import { commandSettings } from './command-settings.ts';

/** How long a host may be unheard before the engine forgets it: `7d`, `36h`, `2w`, between a day and a year. */
export const forgetAfterSetting = z.string().transform((text, context) => {
  const ms = parseForgetAfter(text);
  if (typeof ms === 'string') {
    // The loader names the variable and shows the value: the message says only what is wrong.
    context.addIssue({ code: 'custom', message: ms.replace(/^GPUALERT_FORGET_AFTER /, '').replace(/ \(got .*\)$/, '') });
    return z.NEVER;
  }
  return ms;
});

/** The engine's own settings, wherever it runs (`gpualert engine`, or inside `up` as `engine…`). */
export const ENGINE_SHAPE = {
  /** `/metrics`, `/healthz` and `/readyz`. */
  port: portSetting.default(DEFAULT_ENGINE_PORT),
  listen: listenSetting.default('0.0.0.0'),
  forgetAfter: forgetAfterSetting.optional(),
};
export const ENGINE_SOURCES = {
  port: { env: 'GPUALERT_ENGINE_PORT' },
  listen: { env: 'GPUALERT_ENGINE_LISTEN', flag: false },
  forgetAfter: { env: 'GPUALERT_FORGET_AFTER', flag: false },
} as const;

/** `gpualert engine`: the rules, the clock, where `/metrics` listens, and when an unheard host is forgotten. */
export const ENGINE_SETTINGS = commandSettings({
  command: 'engine',
  schema: CommonConfig.extend({
    rules: z.string().min(1).optional(),
    clock: z.enum(['wall', 'event']).default('wall'),
    ...ENGINE_SHAPE,
  }),
  sources: { ...COMMON_SOURCES, rules: {}, clock: {}, ...ENGINE_SOURCES, port: { env: 'GPUALERT_ENGINE_PORT', flag: '--metrics-port' } },
});
