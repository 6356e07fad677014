import { readFileSync, statSync } from 'node:fs';
import { isNode, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';

/** One problem in a rules file, located for the person who fixes it. */
export interface RuleFileError {
  readonly file: string;
  readonly line: number;
  /** Dotted path of the offending field, e.g. `codes.12.severity`. */
  readonly field: string;
  readonly message: string;
}

export type LoadResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: readonly RuleFileError[] };

export function formatRuleError(error: RuleFileError): string {
  return `${error.file}:${error.line}: ${error.field === '' ? '' : `${error.field}: `}${error.message}`;
}

/** Aliases a rules file may expand: hand-written files use a few; a bomb uses thousands. */
export const MAX_YAML_ALIASES = 100;
/** The largest rules or routes file read: the bundled catalog, the largest, is under 100 KB. */
export const MAX_YAML_BYTES = 4 * 1024 * 1024;

/** Parses YAML text against a schema; every error names the file, the line and the field. */
export function parseYamlText<S extends z.ZodType>(file: string, text: string, schema: S): LoadResult<z.infer<S>> {
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false });
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
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    errors: result.error.issues.map((issue) => ({
      file,
      line: lineOf(document, lines, issue.path),
      field: issue.path.map(String).join('.'),
      message: issue.message,
    })),
  };
}

export function loadYamlFile<S extends z.ZodType>(file: string, schema: S): LoadResult<z.infer<S>> {
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > MAX_YAML_BYTES) return { ok: false, errors: [{ file, line: 0, field: '', message: `too large: ${size} bytes (at most ${MAX_YAML_BYTES})` }] };
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return { ok: false, errors: [{ file, line: 0, field: '', message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` }] };
  }
  return parseYamlText(file, text, schema);
}

/** The line of the deepest node on the path that exists (a missing field points at its parent). */
function lineOf(document: Document, lines: LineCounter, path: readonly PropertyKey[]): number {
  for (let depth = path.length; depth >= 0; depth -= 1) {
    const node = document.getIn(path.slice(0, depth) as unknown[], true);
    if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
  }
  return 1;
}
