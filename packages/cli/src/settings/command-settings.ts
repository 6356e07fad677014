import { resolveConfig, type ConfigInputs, type EffectiveSetting, type SettingSource, type SettingSources } from '@gpualert/config';
import type { z } from 'zod';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * One command's settings: its schema (common settings included), where each comes from besides the
 * config file, and any file of its own read over the config file (the intake's secrets file).
 * Loaded once, through `loadConfig`, at the command's start; `gpualert config show` prints them.
 */
export interface CommandSettings<S extends z.ZodObject> {
  readonly command: string;
  readonly schema: S;
  readonly sources: SettingSources<z.infer<S>>;
  readonly ownFiles?: (options: Readonly<Record<string, unknown>>, env: Env) => NonNullable<ConfigInputs['files']>;
}

export function commandSettings<S extends z.ZodObject>(settings: CommandSettings<S>): CommandSettings<S> {
  return settings;
}

/** A command's flags keyed as its settings are: `--metrics-port` is read into `enginePort` where the sources say so. */
function flagsFor(sources: Readonly<Record<string, SettingSource | undefined>>, options: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const flags = Object.create(null) as Record<string, unknown>;
  for (const [key, source] of Object.entries(sources)) {
    if (source?.flag === false) continue;
    const option = source?.flag === undefined ? key : source.flag.replace(/^--/, '').replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (options[option] !== undefined) flags[key] = options[option];
  }
  return flags;
}

/** The command's settings, frozen, and each as it is in effect with where it came from; one GA-CONFIG-INVALID line when one is wrong. */
export function resolveSettings<S extends z.ZodObject>(
  settings: CommandSettings<S>,
  options: Readonly<Record<string, unknown>>,
  env: Env = process.env,
): { config: Readonly<z.infer<S>>; effective: readonly EffectiveSetting[] } {
  const given = options.config;
  const file = typeof given === 'string' && given !== '' ? given : env.GPUALERT_CONFIG || undefined;
  const { config, settings: effective } = resolveConfig(settings.schema, settings.sources, {
    flags: flagsFor(settings.sources, options),
    env,
    file,
    files: settings.ownFiles?.(options, env) ?? [],
  });
  return { config, effective };
}

/** `resolveSettings`' config alone: what a command runs on. */
export function loadSettings<S extends z.ZodObject>(
  settings: CommandSettings<S>,
  options: Readonly<Record<string, unknown>>,
  env: Env = process.env,
): Readonly<z.infer<S>> {
  return resolveSettings(settings, options, env).config;
}

/** `shape`'s keys under a prefix: `port` under `intake` is `intakePort`. */
export type Prefixed<P extends string, Shape> = { [K in keyof Shape & string as `${P}${Capitalize<K>}`]: Shape[K] };

/**
 * The settings of `shape` under a prefix, for a command that runs several services (`up`: the
 * intake's `port` is `intakePort` there, its flag `--intake-port`, its variable unchanged).
 * Only the keys `flags` names keep a flag.
 */
export function prefixed<P extends string, Shape extends Readonly<Record<string, z.ZodType>>>(
  prefix: P,
  shape: Shape,
  sources: Readonly<Record<string, SettingSource | undefined>>,
  flags: Readonly<Record<string, string>> = {},
): { shape: Prefixed<P, Shape>; sources: { readonly [K in keyof Prefixed<P, Shape>]: SettingSource } } {
  const out: Record<string, z.ZodType> = {};
  const outSources: Record<string, SettingSource> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const name = `${prefix}${key[0]?.toUpperCase() ?? ''}${key.slice(1)}`;
    out[name] = schema;
    const source = sources[key];
    outSources[name] = { ...(source?.env ? { env: source.env } : {}), ...(source?.secret ? { secret: true } : {}), flag: flags[key] ?? false };
  }
  // The loop built exactly the mapped type's keys; TypeScript cannot follow a template-literal rename through Object.entries.
  return { shape: out as Prefixed<P, Shape>, sources: outSources as { readonly [K in keyof Prefixed<P, Shape>]: SettingSource } };
}

/** The settings `prefixed` renamed, back under their own names. */
export function unprefixed(prefix: string, config: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.startsWith(prefix) || key.length === prefix.length) continue;
    const rest = key.slice(prefix.length);
    out[`${rest[0]?.toLowerCase() ?? ''}${rest.slice(1)}`] = value;
  }
  return out;
}
