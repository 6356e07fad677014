import { RE2JS } from 're2js';
import { z } from 'zod';

/**
 * The longest matcher text accepted (a list of matchers included). A regex alternation of a few
 * hundred host names fits; compiling is linear in the pattern, and this keeps one at a few ms.
 */
export const MAX_MATCHER_LENGTH = 4096;
/** Matchers in one list (`{a="1", b=~"2"}`): Alertmanager has no cap; a route or silence uses a handful, so 64 is generous and bounds a check. */
export const MAX_MATCHERS_PER_LIST = 64;

export type MatchOp = '=' | '!=' | '=~' | '!~';

/** `label=value`, `label!=value`, `label=~regex`, `label!~regex` (regexes anchored, as Alertmanager's). */
export interface Matcher {
  readonly label: string;
  readonly op: MatchOp;
  readonly value: string;
  /** RE2 (linear time, no backtracking), compiled once as `^(?:value)$`. */
  readonly regex?: RE2JS;
  /** When the regex is only literals and `|` (`critical|error`), the same answer by set lookup. */
  readonly literals?: ReadonlySet<string>;
}

/** Characters that mean nothing special to RE2 outside a class: a pattern of only these and `|` is a literal alternation. */
const LITERAL_ALTERNATION = /^[A-Za-z0-9_\- :/@,;=<>"'%&~`!]*$/;
/** Go's `\s` (ASCII only), which Alertmanager's parser trims around each token. */
const GO_SPACE = new Set([' ', '\t', '\n', '\f', '\r', '\v']);
const OPS: readonly MatchOp[] = ['=~', '=', '!=', '!~']; // '=~' before '=': as Alertmanager's parser

/** A short, printable quote of outside text for an error message: one line, at most 80 characters. */
function printable(text: string): string {
  const cut = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return cut.replace(/[\u0000-\u001f\u007f]/g, (c) => (c === '\n' ? '\\n' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

const isNameStart = (c: string) => /[A-Za-z_:]/.test(c) || ((c.codePointAt(0) ?? 0) > 127 && !/\s/u.test(c));
const isNameChar = (c: string) => isNameStart(c) || (c >= '0' && c <= '9');

/**
 * Parses a list of matchers the way Alertmanager's `labels.ParseMatchers` does (pkg/labels/parse.go):
 * optional braces, commas outside double quotes separate, a trailing comma is fine, values quoted or
 * not with OpenMetrics escapes (`\"`, `\n`, `\\`). Label names are Prometheus' (`[a-zA-Z_:][a-zA-Z0-9_:]*`),
 * or UTF-8: unquoted when they hold no reserved character (`foo🙂`), else in double quotes
 * (`"foo bar"="baz"`, as Alertmanager 0.27's UTF-8 matchers write them). Returns the matchers or one
 * line saying why not.
 */
export function parseMatchers(text: string): Matcher[] | string {
  if (typeof text !== 'string') return 'a matcher must be a string (label=value, label!=value, label=~regex, label!~regex)';
  if (text.length > MAX_MATCHER_LENGTH) return `matcher ${JSON.stringify(printable(text))} is longer than ${MAX_MATCHER_LENGTH} characters`;
  let s = text.startsWith('{') ? text.slice(1) : text;
  if (s.endsWith('}')) s = s.slice(0, -1);
  const tokens: string[] = [];
  let insideQuotes = false;
  let escaped = false;
  let token = '';
  for (const r of s) {
    if (r === ',' && !insideQuotes) {
      tokens.push(token);
      token = '';
      continue;
    }
    if (r === '"') {
      if (!escaped) insideQuotes = !insideQuotes;
      else escaped = false;
    } else if (r === '\\') escaped = !escaped;
    else if (r !== ',') escaped = false;
    token += r;
  }
  if (token.trim() !== '') tokens.push(token.trim());
  if (tokens.length > MAX_MATCHERS_PER_LIST) return `${tokens.length} matchers in one list (at most ${MAX_MATCHERS_PER_LIST})`;
  const out: Matcher[] = [];
  for (const t of tokens) {
    const m = parseOne(t);
    if (typeof m === 'string') return m;
    out.push(m);
  }
  return out;
}

/** One matcher; a list of several is refused (use parseMatchers). */
export function parseMatcher(text: string): Matcher | string {
  const list = parseMatchers(text);
  if (typeof list === 'string') return list;
  const [only] = list;
  if (only === undefined || list.length !== 1) return `${JSON.stringify(printable(String(text)))}: expected one matcher, found ${list.length}`;
  return only;
}

/** Alertmanager's `labels.ParseMatcher`, by hand: no backtracking regex runs over outside text. */
function parseOne(s: string): Matcher | string {
  const bad = `bad matcher format: ${printable(s)}`;
  let i = 0;
  const skipSpace = () => {
    while (i < s.length && GO_SPACE.has(s.charAt(i))) i += 1;
  };
  skipSpace();
  let label: string;
  if (s[i] === '"') {
    const end = closingQuote(s, i + 1);
    if (end < 0) return bad;
    const name = unescape(s.slice(i + 1, end));
    if (name === '' || !isValidUtf8(name)) return bad;
    label = name;
    i = end + 1;
  } else {
    const start = i;
    const first = String.fromCodePoint(s.codePointAt(i) ?? 0);
    if (i >= s.length || !isNameStart(first)) return bad;
    for (let point = s.codePointAt(i); point !== undefined; point = s.codePointAt(i)) {
      const c = String.fromCodePoint(point);
      if (!isNameChar(c)) break;
      i += c.length;
    }
    label = s.slice(start, i);
  }
  skipSpace();
  const op = OPS.find((o) => s.startsWith(o, i));
  if (!op) return bad;
  i += op.length;
  skipSpace();
  let end = s.length;
  while (end > i && GO_SPACE.has(s.charAt(end - 1))) end -= 1;
  const raw = s.slice(i, end);
  const value = unquoteValue(raw);
  if (value === undefined) return `matcher value contains unescaped double quote: ${printable(raw)}`;
  if (!isValidUtf8(value)) return `matcher value not valid UTF-8: ${printable(raw)}`;
  return newMatcher(label, op, value);
}

/** Where an unescaped `"` closes a quoted label name, or -1. */
function closingQuote(s: string, from: number): number {
  for (let i = from; i < s.length; i += 1) {
    if (s[i] === '\\') i += 1;
    else if (s[i] === '"') return i;
  }
  return -1;
}

function unescape(text: string): string {
  return text.replace(/\\(.)/gsu, (_, c: string) => (c === 'n' ? '\n' : c === '"' || c === '\\' ? c : `\\${c}`));
}

/** The value's OpenMetrics unescaping and quote rules, exactly as Alertmanager applies them; undefined: an unescaped quote. */
function unquoteValue(rawValue: string): string | undefined {
  let raw = rawValue;
  let expectTrailingQuote = false;
  if (raw.startsWith('"')) {
    raw = raw.slice(1);
    expectTrailingQuote = true;
  }
  let value = '';
  let escaped = false;
  for (let i = 0; i < raw.length; i += 1) {
    const r = raw.charAt(i);
    if (escaped) {
      escaped = false;
      value += r === 'n' ? '\n' : r === '"' || r === '\\' ? r : `\\${r}`;
      continue;
    }
    if (r === '\\') {
      if (i < raw.length - 1) escaped = true;
      else value += '\\';
    } else if (r === '"') {
      if (!expectTrailingQuote || i < raw.length - 1) return undefined;
      expectTrailingQuote = false;
    } else value += r;
  }
  return expectTrailingQuote ? undefined : value;
}

/** A lone surrogate is what invalid UTF-8 becomes in a JS string; Alertmanager refuses invalid UTF-8. */
function isValidUtf8(text: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

/** A matcher from its parts (the API's `{name, value, isRegex, isEqual}` shape), or one line saying why not. */
export function newMatcher(label: string, op: MatchOp, value: string): Matcher | string {
  if (op === '=~' || op === '!~') {
    const regex = compileAnchored(value);
    if (typeof regex === 'string') return regex;
    return { label, op, value, regex, ...(LITERAL_ALTERNATION.test(value.replaceAll('|', '')) ? { literals: new Set(value.split('|')) } : {}) };
  }
  return { label, op, value };
}

/** The pattern alone must compile, so `a)|(b` cannot escape the anchors. RE2 syntax, as Go's regexp: `(?i)`, `[[:digit:]]`. */
function compileAnchored(value: string): RE2JS | string {
  if (value.length > MAX_MATCHER_LENGTH) return `regex longer than ${MAX_MATCHER_LENGTH} characters`;
  try {
    RE2JS.compile(value);
    return RE2JS.compile(`^(?:${value})$`);
  } catch (error) {
    return `not an RE2 regular expression: ${printable((error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' '))}`;
  }
}

const escapeOpenMetrics = (text: string) => text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('"', '\\"');

/** A label name written bare only when it parses back bare; else quoted (Alertmanager quotes names with reserved characters). */
function bareName(label: string): boolean {
  const chars = [...label];
  const [first] = chars;
  return first !== undefined && isNameStart(first) && chars.every(isNameChar);
}

/** A matcher as Alertmanager writes it (`Matcher.String()`, OpenMetrics escapes): parses back to the same matcher. */
export function formatMatcher(m: Pick<Matcher, 'label' | 'op' | 'value'>): string {
  const name = bareName(m.label) ? m.label : `"${escapeOpenMetrics(m.label)}"`;
  return `${name}${m.op}"${escapeOpenMetrics(m.value)}"`;
}

/** Matchers in a YAML file (`matchers:` items; each item may hold a list), validated and compiled at load. */
export const MatcherText = z.string().transform((text, ctx) => {
  const parsed = parseMatchers(text);
  if (typeof parsed === 'string') {
    ctx.addIssue({ code: 'custom', message: parsed });
    return z.NEVER;
  }
  return parsed;
});
/** A `matchers:` list: every item parsed, flattened in order. */
export const MatcherList = z.array(MatcherText).transform((lists) => lists.flat());

/** The label's value; a missing label is the empty string (and never an inherited property). */
export function labelValue(labels: Readonly<Record<string, string>>, label: string): string {
  if (!Object.hasOwn(labels, label)) return '';
  const value = labels[label];
  return typeof value === 'string' ? value : '';
}

export function matches(matcher: Matcher, labels: Readonly<Record<string, string>>): boolean {
  return matchesValue(matcher, labelValue(labels, matcher.label));
}

export function matchesValue(matcher: Matcher, value: string): boolean {
  switch (matcher.op) {
    case '=':
      return value === matcher.value;
    case '!=':
      return value !== matcher.value;
    case '=~':
      return regexMatches(matcher, value);
    case '!~':
      return !regexMatches(matcher, value);
  }
}

/** A `=~` or `!~` matcher's answer: by set lookup for a literal alternation, else by its compiled regex. */
function regexMatches(matcher: Matcher, value: string): boolean {
  if (matcher.literals) return matcher.literals.has(value);
  if (matcher.regex) return matcher.regex.testExact(value);
  throw new Error(`gpualert bug: the regex matcher on ${matcher.label} was built without parseMatcher, so it has no compiled regex`);
}

/** Alertmanager's rule for silences: a matcher that matches a missing label matches everything. */
export function matchesEmpty(matcher: Matcher): boolean {
  return matchesValue(matcher, '');
}

export function matchesAll(matchers: readonly Matcher[], labels: Readonly<Record<string, string>>): boolean {
  return matchers.every((m) => matches(m, labels));
}
