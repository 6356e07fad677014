import { readFileSync } from 'node:fs';
import { redactSecrets } from '@gpualert/log';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { GpualertError } from '@gpualert/schema';

/** Where one setting can come from besides the file: its flag and its environment variable. */
export interface SettingSource {
  /** The environment variable; none: the setting has no variable. */
  readonly env?: string;
  /** The flag, when it is not `--` + the key in kebab case; `false`: no flag (a secret never comes from a command line, which every user of the machine can read). */
  readonly flag?: string | false;
  /** A value that may carry a credential (a Redis URL, a broker list, a token): never echoed, even redacted. */
  readonly secret?: boolean;
}

export type SettingSources<Shape> = { readonly [K in keyof Shape]: SettingSource };

export interface ConfigInputs {
  /** Parsed command-line flags, keyed like the schema; undefined means not given. */
  readonly flags?: Readonly<Record<string, unknown>>;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** A JSON or YAML file keyed like the schema. */
  readonly file?: string | undefined;
  /**
   * Further files, each over the one before (and over `file`): a service's own secrets file. With
   * a prefix, its keys are read under it (`token` as `intakeToken`), for a command that runs several services.
   */
  readonly files?: readonly (string | { readonly path: string; readonly prefix: string })[];
}

export class ConfigError extends GpualertError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('GA-CONFIG-INVALID', message, options);
  }
}

/** Where a setting's value came from. */
export type SettingOrigin = 'flag' | 'environment' | 'file' | 'default';

/** One setting as it is in effect: what `gpualert config show` prints. */
export interface EffectiveSetting {
  readonly key: string;
  /** The value as it may be shown: a secret is `(set, N characters)`, never its text; undefined when unset. */
  readonly shown: string | undefined;
  readonly origin: SettingOrigin | 'unset';
  /** The flag, the variable or the file it came from (`--port (flag)`, `GPUALERT_NOTIFIER_PORT (environment)`, `key (file)`). */
  readonly where: string | undefined;
  readonly secret: boolean;
  /** How it may be set: its variable and its flag, where it has them. */
  readonly env: string | undefined;
  readonly flag: string | undefined;
}

type Origin = { readonly label: string; readonly kind: SettingOrigin; readonly value: unknown };

function flagOf(key: string, source: SettingSource | undefined): string | undefined {
  if (source?.flag === false) return undefined;
  return source?.flag ?? `--${kebab(key)}`;
}

/** Each key's given value and where it came from: flags over the environment over the files. */
function gather(keys: readonly string[], sources: Readonly<Record<string, SettingSource | undefined>>, inputs: ConfigInputs): Map<string, Origin> {
  const files = [...(inputs.file ? [inputs.file] : []), ...(inputs.files ?? [])].map((entry) => {
    if (typeof entry === 'string') return { path: entry, values: readConfigFile(entry) };
    const values: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(readConfigFile(entry.path))) values[`${entry.prefix}${key.charAt(0).toUpperCase()}${key.slice(1)}`] = value;
    return { path: entry.path, values };
  });
  const origins = new Map<string, Origin>();
  for (const key of keys) {
    const source = sources[key];
    const flagName = flagOf(key, source);
    // A flag's value is taken only for a setting that has a flag: a secret passed as one is not read.
    const flag = flagName !== undefined ? inputs.flags?.[key] : undefined;
    const env = source?.env ? inputs.env?.[source.env] : undefined;
    const fromFile = files.findLast((f) => Object.hasOwn(f.values, key) && f.values[key] !== undefined && f.values[key] !== null);
    if (flag !== undefined) origins.set(key, { label: `${flagName} (flag)`, kind: 'flag', value: flag });
    else if (env !== undefined && env !== '') origins.set(key, { label: `${source?.env} (environment)`, kind: 'environment', value: env });
    else if (fromFile) origins.set(key, { label: `${key} (${fromFile.path})`, kind: 'file', value: fromFile.values[key] });
  }
  return origins;
}

/**
 * Reads a command's settings once, at start: flags win over the environment, which wins over the
 * files, which win over the schema's defaults. An empty variable is no value. Throws one
 * `ConfigError` whose message is one line naming the setting and where it came from, never a
 * secret's text; the result is frozen.
 */
export function loadConfig<S extends z.ZodObject>(schema: S, sources: SettingSources<z.infer<S>>, inputs: ConfigInputs): Readonly<z.infer<S>> {
  return resolveConfig(schema, sources, inputs).config;
}

/** `loadConfig`, and each setting as it is in effect with where it came from (secrets shown by length only). */
export function resolveConfig<S extends z.ZodObject>(
  schema: S,
  sources: SettingSources<z.infer<S>>,
  inputs: ConfigInputs,
): { config: Readonly<z.infer<S>>; settings: readonly EffectiveSetting[] } {
  const bySource: Readonly<Record<string, SettingSource | undefined>> = sources;
  const keys = Object.keys(schema.shape);
  const origins = gather(keys, bySource, inputs);
  const merged: Record<string, unknown> = {};
  for (const [key, origin] of origins) merged[key] = origin.value;
  const result = schema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0];
    const key = String(issue?.path[0] ?? '');
    const origin = origins.get(key);
    const source = bySource[key];
    const where = origin?.label ?? `${source?.env ?? flagOf(key, source) ?? key} (not set)`;
    // Inside a list of several or a mapping: which item (counted from 1) or field.
    const given = origin?.value;
    const several = Array.isArray(given) ? given.length > 1 : typeof given === 'string' && given.split(/[\s,]+/).filter((s) => s !== '').length > 1;
    const inner = (issue?.path.slice(1) ?? []).map((part) => (typeof part === 'number' ? (several ? ` item ${part + 1}:` : '') : ` ${String(part)}:`)).join('');
    // A malformed secret may not look like one (`redis//:pw@host`, a bare password): say its shape, not its value.
    const got = !origin
      ? ''
      : source?.secret === true
        ? ` (got a value of ${String(origin.value).length} characters, not shown)`
        : ` (got ${redactSecrets(JSON.stringify(origin.value) ?? String(origin.value))})`;
    throw new ConfigError(`invalid config: ${where}:${inner} ${issue?.message ?? 'invalid'}${got}`);
  }
  const config: Record<string, unknown> = result.data;
  const settings = keys.map((key): EffectiveSetting => {
    const origin = origins.get(key);
    const value = config[key];
    const secret = bySource[key]?.secret === true;
    return {
      key,
      shown:
        value === undefined
          ? undefined
          : secret
            ? secretShown(value)
            : redactSecrets(typeof value === 'string' && value !== '' ? value : JSON.stringify(value)),
      origin: origin?.kind ?? (value === undefined ? 'unset' : 'default'),
      where: origin?.label,
      secret,
      env: bySource[key]?.env,
      flag: flagOf(key, bySource[key]),
    };
  });
  return { config: deepFreeze(result.data), settings };
}

/** A secret as it may be shown: whether it is set, and its size, never its text. */
function secretShown(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? 'none' : `(set, ${value.length} ${value.length === 1 ? 'item' : 'items'})`;
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return text === '' ? 'none' : `(set, ${text.length} characters)`;
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
    throw new ConfigError(`invalid config: cannot read config file ${path}: ${code ?? String(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new ConfigError(
      `invalid config: ${path} is not YAML or JSON: ${redactSecrets((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '')}`,
    );
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isMapping(parsed)) throw new ConfigError(`invalid config: ${path} must hold a mapping of settings`);
  return parsed;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function deepFreeze<T>(value: T): Readonly<T> {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
