import { redactUrl } from '@gpualert/log';
import { z } from 'zod';

/**
 * The pieces a channel's settings are described with (each `*.descriptor.ts` lists its keys), and
 * the zod schema built from them. It knows no channel.
 */

/** The longest setting value: URLs and keys are far shorter; a megabyte of YAML in one value is a mistake. */
export const MAX_SETTING_LENGTH = 2048;

const ENV_REF = /^env:[A-Za-z_][A-Za-z0-9_]*$/;
export function isEnvRef(value: unknown): value is string {
  return typeof value === 'string' && ENV_REF.test(value);
}

/** Why a value is not a fit URL for this kind of setting, or undefined. The value shows redacted only. */
export function urlProblem(value: string, kind: 'http_url' | 'smtp_url'): string | undefined {
  const schemes = kind === 'http_url' ? ['http:', 'https:'] : ['smtp:', 'smtps:'];
  const expected = `expected a URL with scheme ${schemes.map((s) => `${s}//`).join(' or ')}`;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return `${expected} (got "${redactUrl(value)}")`;
  }
  if (!schemes.includes(parsed.protocol) || !parsed.hostname) return `${expected} (got "${redactUrl(value)}")`;
  // Credentials in an HTTP URL end up in logs and error messages; they belong in their own settings.
  if (kind === 'http_url' && (parsed.username || parsed.password))
    return 'the URL must not carry user:password; put credentials in their own settings (user, token, password)';
  return undefined;
}

/** Why a value does not fit a setting, or undefined. Never shows a secret. */
export type SettingCheck = (value: string) => string | undefined;

/** One key of a channel's settings: whether the channel needs it, and the values it takes. */
export interface SettingField<Required extends boolean = boolean, Value extends string = string> {
  readonly required: Required;
  readonly check?: SettingCheck;
  /** The only values it takes (any text when absent). */
  readonly values?: readonly Value[];
}

export type SettingFields = Readonly<Record<string, SettingField>>;

type ValueOf<F> = F extends SettingField<boolean, infer V> ? V : string;
/** The settings a channel is built from, once checked: the keys it needs are there, the others may be. */
export type SettingsOf<F extends SettingFields> = { readonly [K in keyof F as F[K]['required'] extends true ? K : never]: ValueOf<F[K]> } & {
  readonly [K in keyof F as F[K]['required'] extends true ? never : K]?: ValueOf<F[K]>;
};

/** A check across keys (one of two needed, say), after each key's own: the key to report at and why. */
export type SettingsCheck = (settings: Readonly<Record<string, string>>) => { readonly key: string; readonly message: string } | undefined;

const httpUrl: SettingCheck = (value) => urlProblem(value, 'http_url');

/** Text the channel needs. */
export const needText: SettingField<true> = { required: true };
/** Text the channel may take. */
export const mayText: SettingField<false> = { required: false };
/** An http(s) URL the channel needs, without user:password. */
export const needUrl: SettingField<true> = { required: true, check: httpUrl };
/** An http(s) URL the channel may take, without user:password. */
export const mayUrl: SettingField<false> = { required: false, check: httpUrl };
/** An smtp(s) URL the channel needs. */
export const needSmtpUrl: SettingField<true> = { required: true, check: (value) => urlProblem(value, 'smtp_url') };
/** A whole number, 0 or more, the channel may take. */
export const mayCount: SettingField<false> = {
  required: false,
  check: (value) => (/^\d{1,9}$/.test(value) ? undefined : 'expected a whole number, 0 or more'),
};

/** An optional setting checked by `check`. */
export function mayChecked(check: SettingCheck): SettingField<false> {
  return { required: false, check };
}

/** An optional setting that takes one of `values`; the refusal says `expected <expected>`. */
export function mayOneOf<const V extends string>(values: readonly V[], expected = `one of ${values.join(', ')}`): SettingField<false, V> {
  return { required: false, values, check: (value) => (values.some((v) => v === value) ? undefined : `expected ${expected}`) };
}

/** Whether checked settings hold what `fields` say: every needed key, and only listed values. */
function isSettingsOf<F extends SettingFields>(
  settings: Readonly<Record<string, string>>,
  fields: F,
): settings is Readonly<Record<string, string>> & SettingsOf<F> {
  return Object.entries(fields).every(([key, field]) => {
    const value = Object.hasOwn(settings, key) ? settings[key] : undefined;
    if (value === undefined || value === '') return !field.required;
    return field.values === undefined || field.values.some((v) => v === value);
  });
}

/**
 * A channel's settings as zod schemas. `atLoad`: a value may be `env:NAME` (read at start);
 * `resolved`: the environment's values in, each checked, typed for the channel's constructor.
 */
export interface SettingsSchema {
  readonly fields: SettingFields;
  readonly atLoad: z.ZodType<Record<string, string>>;
  readonly resolved: z.ZodType<Record<string, string>>;
}

/** The schemas, and `typed`: the resolved settings as the channel's constructor takes them. */
export function settingsSchema<const F extends SettingFields>(
  channel: string,
  fields: F,
  across?: SettingsCheck,
): SettingsSchema & { readonly typed: z.ZodType<SettingsOf<F>> } {
  const checked = (allowEnv: boolean) =>
    z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).transform((settings, ctx) => {
      const out: Record<string, string> = Object.create(null) as Record<string, string>;
      for (const [key, raw] of Object.entries(settings)) {
        const field = Object.hasOwn(fields, key) ? fields[key] : undefined;
        if (!field) {
          ctx.addIssue({ code: 'custom', path: [key], message: `${channel} takes no setting "${key}" (it takes ${Object.keys(fields).join(', ') || 'none'})` });
          continue;
        }
        const value = String(raw);
        if (value.length > MAX_SETTING_LENGTH) {
          ctx.addIssue({ code: 'custom', path: [key], message: `longer than ${MAX_SETTING_LENGTH} characters` });
          continue;
        }
        out[key] = value;
        if (allowEnv && isEnvRef(value)) continue;
        const problem = field.check?.(value);
        if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
      }
      for (const [key, field] of Object.entries(fields)) {
        if (field.required && !(Object.hasOwn(out, key) && out[key] !== ''))
          ctx.addIssue({ code: 'custom', path: [key], message: `${channel} needs settings.${key}` });
      }
      const problem = across?.(out);
      if (problem) ctx.addIssue({ code: 'custom', path: [problem.key], message: problem.message });
      return out;
    });
  const resolved = checked(false);
  return {
    fields,
    atLoad: checked(true),
    resolved,
    typed: resolved.transform((settings, ctx) => {
      if (isSettingsOf(settings, fields)) return settings;
      // Unreachable: every key was checked above; a bug if not.
      ctx.addIssue({ code: 'custom', message: `${channel}: settings checked but not as the channel takes them` });
      return z.NEVER;
    }),
  };
}
