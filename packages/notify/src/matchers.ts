import { z } from 'zod';

/** `label=value`, `label!=value`, `label=~regex`, `label!~regex` (regexes anchored, as Alertmanager's). */
export interface Matcher {
  readonly label: string;
  readonly op: '=' | '!=' | '=~' | '!~';
  readonly value: string;
  readonly regex?: RegExp;
}

const MATCHER = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"?(.*?)"?\s*$/;

export function parseMatcher(text: string): Matcher | string {
  const match = MATCHER.exec(text);
  if (!match) return `"${text}" is not a matcher (label=value, label!=value, label=~regex, label!~regex)`;
  const [, label, op, value] = match as unknown as [string, string, Matcher['op'], string];
  if (op === '=~' || op === '!~') {
    try {
      return { label, op, value, regex: new RegExp(`^(?:${value})$`) };
    } catch (error) {
      return `"${value}" is not a regular expression: ${(error as Error).message}`;
    }
  }
  return { label, op, value };
}

/** A matcher in a YAML file, validated (and compiled) at load. */
export const MatcherText = z.string().transform((text, ctx) => {
  const parsed = parseMatcher(text);
  if (typeof parsed === 'string') {
    ctx.addIssue({ code: 'custom', message: parsed });
    return z.NEVER;
  }
  return parsed;
});

export function matches(matcher: Matcher, labels: Readonly<Record<string, string>>): boolean {
  const value = labels[matcher.label] ?? '';
  switch (matcher.op) {
    case '=':
      return value === matcher.value;
    case '!=':
      return value !== matcher.value;
    case '=~':
      return matcher.regex!.test(value);
    case '!~':
      return !matcher.regex!.test(value);
  }
}

export function matchesAll(matchers: readonly Matcher[], labels: Readonly<Record<string, string>>): boolean {
  return matchers.every((m) => matches(m, labels));
}
