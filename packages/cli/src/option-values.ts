import { CliError } from './cli-error.ts';

/** Commander's values for a command's flags, by camel-cased name. */
export type Options = Readonly<Record<string, unknown>>;

const flag = (name: string) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** A `--name <value>` flag: its text, or undefined when not given. */
export function stringOption(options: Options, name: string): string | undefined {
  const value = options[name];
  if (value === undefined || typeof value === 'string') return value;
  throw new CliError(`${flag(name)} needs a value`);
}

/** A repeatable `--name <value...>` flag: its texts, or undefined when not given. */
export function stringListOption(options: Options, name: string): string[] | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  throw new CliError(`${flag(name)} needs values`);
}

/** Whether a flag's word is one of the choices it takes, as their type. */
export function oneOf<T extends string>(choices: readonly T[], value: string): value is T {
  return choices.some((choice) => choice === value);
}
