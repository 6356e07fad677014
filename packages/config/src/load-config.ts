import { readFileSync } from 'node:fs';
import { redactSecrets } from '@gpualert/log';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { GpualertError } from '@gpualert/schema';

/** Where one setting can come from: its flag name (camelCase key) and its environment variable. */
export interface SettingSource {
  readonly env: string;
  /** A value that may carry a credential (a Redis URL, a broker list): never echoed, even redacted. */
  readonly secret?: boolean;
}

export type SettingSources<Shape> = { readonly [K in keyof Shape]: SettingSource };

export interface ConfigInputs {
  /** Parsed command-line flags, keyed like the schema; undefined means not given. */
  readonly flags?: Readonly<Record<string, unknown>>;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** A JSON or YAML file keyed like the schema. */
  readonly file?: string | undefined;
}

export class ConfigError extends GpualertError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('GA-CONFIG-INVALID', message, options);
  }
}

type Origin = { readonly label: string; readonly value: unknown };

/**
 * Reads a service's config once, at start: flags win over the environment, which wins over the
 * file, which wins over the schema's defaults. Throws one `ConfigError` whose message is one line
 * naming the setting and where it came from; the result is frozen.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  sources: SettingSources<z.infer<S>>,
  inputs: ConfigInputs,
): Readonly<z.infer<S>> {
  const fromFile = inputs.file ? readConfigFile(inputs.file) : {};
  const merged: Record<string, unknown> = {};
  const origins = new Map<string, Origin>();
  for (const key of Object.keys(schema.shape)) {
    const envName = (sources as Record<string, SettingSource | undefined>)[key]?.env;
    const flag = inputs.flags?.[key];
    const env = envName ? inputs.env?.[envName] : undefined;
    let origin: Origin | undefined;
    if (flag !== undefined) origin = { label: `--${kebab(key)} (flag)`, value: flag };
    else if (env !== undefined && env !== '') origin = { label: `${envName} (environment)`, value: env };
    else if (fromFile[key] !== undefined) origin = { label: `${key} (${inputs.file})`, value: fromFile[key] };
    if (origin) {
      merged[key] = origin.value;
      origins.set(key, origin);
    }
  }
  const result = schema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = String(issue.path[0] ?? '');
    const origin = origins.get(key);
    const envName = (sources as Record<string, SettingSource | undefined>)[key]?.env;
    const where = origin?.label ?? `${envName ?? key} (not set)`;
    // The value shown redacted: REDIS_URL and KAFKA_BROKERS may carry a password.
    // A malformed secret may not look like one (`redis//:pw@host`, a bare password): say its shape, not its value.
    const secret = (sources as Record<string, SettingSource | undefined>)[key]?.secret === true;
    const got = !origin ? '' : secret ? ` (got a value of ${String(origin.value).length} characters, not shown)` : ` (got ${redactSecrets(JSON.stringify(origin.value) ?? String(origin.value))})`;
    throw new ConfigError(`invalid config: ${where}: ${issue.message}${got}`);
  }
  return deepFreeze(result.data);
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`invalid config: cannot read config file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`invalid config: ${path} is not YAML or JSON: ${redactSecrets((error as Error).message.split('\n')[0] ?? '')}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`invalid config: ${path} must hold a mapping of settings`);
  }
  return parsed as Record<string, unknown>;
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
