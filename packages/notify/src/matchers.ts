import { RE2JS } from 're2js';
import { z } from 'zod';

/**
 * The longest matcher text accepted (label, operator and value). A regex alternation of a few
 * hundred host names fits; compiling is linear in the pattern, and this keeps one at a few ms.
 */
export const MAX_MATCHER_LENGTH = 4096;

/** `label=value`, `label!=value`, `label=~regex`, `label!~regex` (regexes anchored, as Alertmanager's). */
export interface Matcher {
  readonly label: string;
  readonly op: '=' | '!=' | '=~' | '!~';
  readonly value: string;
  /** RE2 (linear time, no backtracking), compiled once as `^(?:value)$`. */
  readonly regex?: RE2JS;
  /** When the regex is only literals and `|` (`critical|error`), the same answer by set lookup. */
  readonly literals?: ReadonlySet<string>;
}

/** Characters that mean nothing special to RE2 outside a class: a pattern of only these and `|` is a literal alternation. */
const LITERAL_ALTERNATION = /^[A-Za-z0-9_\- :/@,;=<>"'%&~`!]*$/;

const LABEL = /^[A-Za-z_][A-Za-z0-9_]*/;
const OPS = ['=~', '!~', '!=', '='] as const;
const SYNTAX = 'label=value, label!=value, label=~regex, label!~regex';

/** A short, printable quote of outside text for an error message. */
function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

/**
 * Parses one matcher, or says in one line why not. Regexes are RE2 syntax (what Prometheus and
 * Alertmanager users write: `(?i)`, `[[:digit:]]`); backreferences and lookaround are refused.
 */
export function parseMatcher(text: string): Matcher | string {
  if (typeof text !== 'string') return `a matcher must be a string (${SYNTAX})`;
  if (text.length > MAX_MATCHER_LENGTH) return `matcher ${quote(text)} is longer than ${MAX_MATCHER_LENGTH} characters`;
  // Parsed by hand: the matcher text is outside input, so no backtracking regex runs over all of it.
  const trimmed = text.trim();
  const label = LABEL.exec(trimmed)?.[0];
  if (!label) return `${quote(text)} is not a matcher (${SYNTAX})`;
  const rest = trimmed.slice(label.length).trimStart();
  const op = OPS.find((o) => rest.startsWith(o));
  if (!op) return `${quote(text)} is not a matcher (${SYNTAX})`;
  let value = rest.slice(op.length).trimStart();
  if (value.startsWith('"')) {
    if (value.length < 2 || !value.endsWith('"')) return `${quote(text)}: the value's quote is not closed`;
    value = value.slice(1, -1);
  }
  if (op === '=~' || op === '!~') {
    const regex = compileAnchored(value);
    if (typeof regex === 'string') return `${quote(text)}: ${regex}`;
    return { label, op, value, regex, ...(LITERAL_ALTERNATION.test(value.replaceAll('|', '')) ? { literals: new Set(value.split('|')) } : {}) };
  }
  return { label, op, value };
}

/** The pattern alone must compile, so `a)|(b` cannot escape the anchors. */
function compileAnchored(value: string): RE2JS | string {
  try {
    RE2JS.compile(value);
    return RE2JS.compile(`^(?:${value})$`);
  } catch (error) {
    return `not an RE2 regular expression: ${(error as Error).message.replace(/\s+/g, ' ')}`;
  }
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

/** The label's value; a missing label is the empty string (and never an inherited property). */
export function labelValue(labels: Readonly<Record<string, string>>, label: string): string {
  if (!Object.hasOwn(labels, label)) return '';
  const value = labels[label];
  return typeof value === 'string' ? value : '';
}

export function matches(matcher: Matcher, labels: Readonly<Record<string, string>>): boolean {
  return matchesValue(matcher, labelValue(labels, matcher.label));
}

function matchesValue(matcher: Matcher, value: string): boolean {
  switch (matcher.op) {
    case '=':
      return value === matcher.value;
    case '!=':
      return value !== matcher.value;
    case '=~':
      return matcher.literals ? matcher.literals.has(value) : matcher.regex!.testExact(value);
    case '!~':
      return !(matcher.literals ? matcher.literals.has(value) : matcher.regex!.testExact(value));
  }
}

/** Alertmanager's rule for silences: a matcher that matches a missing label matches everything. */
export function matchesEmpty(matcher: Matcher): boolean {
  return matchesValue(matcher, '');
}

export function matchesAll(matchers: readonly Matcher[], labels: Readonly<Record<string, string>>): boolean {
  return matchers.every((m) => matches(m, labels));
}
