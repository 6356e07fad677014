import { readFileSync, statSync } from 'node:fs';
import { isMap, isNode, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { must } from '@gpualert/schema';

/** One problem in a rules file, located for the person who fixes it. */
export interface RuleFileError {
  readonly file: string;
  readonly line: number;
  /** Dotted path of the offending field, e.g. `codes.12.severity`. */
  readonly field: string;
  readonly message: string;
}

export type LoadResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: readonly RuleFileError[] };

/** A YAML file's result, with where each field of it is: for errors found after the schema (a template's overrides). */
export type YamlLoadResult<T> =
  | { readonly ok: true; readonly value: T; readonly lineOf: (path: readonly PropertyKey[]) => number }
  | { readonly ok: false; readonly errors: readonly RuleFileError[] };

export function formatRuleError(error: RuleFileError): string {
  return `${error.file}:${error.line}: ${error.field === '' ? '' : `${error.field}: `}${error.message}`;
}

/** Aliases a rules file may expand: hand-written files use a few; a bomb uses thousands. */
export const MAX_YAML_ALIASES = 100;
/** The largest rules or routes file read: the bundled catalog, the largest, is under 100 KB. */
export const MAX_YAML_BYTES = 4 * 1024 * 1024;

/**
 * Parses YAML text against a schema; every error names the file, the line and the field. `prepare`
 * may change the parsed document before it becomes values (the routes file reads some scalars as
 * the text written, as Go's YAML does for Alertmanager).
 */
export function parseYamlText<S extends z.ZodType>(file: string, text: string, schema: S, prepare?: (document: Document) => void): YamlLoadResult<z.infer<S>> {
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (document.errors.length === 0) prepare?.(document);
  if (document.errors.length > 0) {
    return {
      ok: false,
      errors: document.errors.map((e) => ({
        file,
        line: e.linePos?.[0]?.line ?? 1,
        field: '',
        message: `not valid YAML: ${e.message.split('\n')[0]}`,
      })),
    };
  }
  let value: unknown;
  try {
    // A YAML bomb (aliases of aliases) stops here, at the library's alias limit, not in memory.
    value = document.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (error) {
    return { ok: false, errors: [{ file, line: 1, field: '', message: `not usable YAML: ${error instanceof Error ? error.message : String(error)}` }] };
  }
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data, lineOf: (path) => lineOf(document, lines, path) };
  return {
    ok: false,
    errors: result.error.issues.flatMap((issue) => {
      // A key the schema does not know: one error per key, at the key's own line, named by its path.
      // At most MAX_NAMED_KEYS of them named (each found by a look through its mapping), the rest counted.
      if (issue.code === 'unrecognized_keys') {
        const named = issue.keys.slice(0, MAX_NAMED_KEYS).map((key) => ({ file, line: keyLine(document, lines, issue.path, key), field: [...issue.path, key].map(String).join('.'), message: `unknown key "${key}"` }));
        const more = issue.keys.length - named.length;
        return more > 0 ? [...named, { file, line: lineOf(document, lines, issue.path), field: issue.path.map(String).join('.'), message: `and ${more} more unknown keys` }] : named;
      }
      return [{ file, line: lineOf(document, lines, issue.path), field: issue.path.map(String).join('.'), message: withNearest(issue, valueAt(value, issue.path)) }];
    }),
  };
}

/** A YAML file's text, read once within its bound; a FIFO or a device is refused (reading one could block the process). */
export function readYamlText(file: string): { ok: true; text: string } | { ok: false; errors: RuleFileError[] } {
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return { ok: false, errors: [{ file, line: 0, field: '', message: 'not a regular file' }] };
    if (stat.size > MAX_YAML_BYTES) return { ok: false, errors: [{ file, line: 0, field: '', message: `too large: ${stat.size} bytes (at most ${MAX_YAML_BYTES})` }] };
    return { ok: true, text: readFileSync(file, 'utf8') };
  } catch (error) {
    return { ok: false, errors: [{ file, line: 0, field: '', message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` }] };
  }
}

export function loadYamlFile<S extends z.ZodType>(file: string, schema: S, prepare?: (document: Document) => void): YamlLoadResult<z.infer<S>> {
  const read = readYamlText(file);
  return read.ok ? parseYamlText(file, read.text, schema, prepare) : read;
}

/**
 * The line of the deepest node on the path that exists (a missing field points at its parent); a
 * field of a mapping is at its key's line (a block mapping's value starts on the line after).
 */
function lineOf(document: Document, lines: LineCounter, path: readonly PropertyKey[]): number {
  for (let depth = path.length; depth >= 0; depth -= 1) {
    const node = document.getIn(path.slice(0, depth), true);
    if (!isNode(node) || !node.range) continue;
    if (depth > 0 && isMap(node) && node.items.length > 0) {
      const parent = depth === 1 ? document.contents : document.getIn(path.slice(0, depth - 1), true);
      const pair = isMap(parent) ? parent.items.find((item) => isScalar(item.key) && String(item.key.value) === String(path[depth - 1])) : undefined;
      if (pair && isNode(pair.key) && pair.key.range) return lines.linePos(pair.key.range[0]).line;
    }
    return lines.linePos(node.range[0]).line;
  }
  return 1;
}

/** Unknown keys of one mapping named one by one; past this, counted. */
const MAX_NAMED_KEYS = 20;

/** The line where `key` is written in the mapping at `path` (the mapping's line when it cannot be found). */
function keyLine(document: Document, lines: LineCounter, path: readonly PropertyKey[], key: string): number {
  const node = path.length === 0 ? document.contents : document.getIn(path, true);
  if (isMap(node)) {
    const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === key);
    if (pair && isNode(pair.key) && pair.key.range) return lines.linePos(pair.key.range[0]).line;
  }
  return lineOf(document, lines, path);
}

/** An enum's "expected one of" with the nearest valid value named: `kinds: [xdi]` → did you mean "xid"? */
export function withNearest(issue: { readonly code: string; readonly message: string; readonly values?: readonly unknown[] }, got: unknown): string {
  if (issue.code !== 'invalid_value' || !issue.values || typeof got !== 'string') return issue.message;
  const options = issue.values.filter((v): v is string => typeof v === 'string');
  const nearest = nearestOf(got, options);
  const shown = JSON.stringify(got.slice(0, 80));
  return `${shown} is not one of ${options.join(', ')}${nearest ? `; did you mean "${nearest}"?` : ''}`;
}

/** The option closest to `value` by edit distance, if close enough to be a typo (at most a third of it, and 3). */
export function nearestOf(value: string, options: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const input = value.toLowerCase().slice(0, 80);
  for (const option of options) {
    const d = editDistance(input, option.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [option, d];
  }
  return bestDistance <= Math.min(3, Math.max(1, Math.ceil(input.length / 3))) ? best : undefined;
}

/** Levenshtein distance with adjacent transpositions (`xdi` is one step from `xid`). */
function editDistance(a: string, b: string): number {
  // Row by row: the row before last (for a transposition), the last, and this one.
  let before: number[] = [];
  let last = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(cell(last, j) + 1, cell(row, j - 1) + 1, cell(last, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, cell(before, j - 2) + 1);
      row.push(v);
    }
    [before, last] = [last, row];
  }
  return cell(last, b.length);
}

function cell(row: readonly number[], j: number): number {
  return must(row[j], 'every row of the distance table is b.length + 1 long');
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}
