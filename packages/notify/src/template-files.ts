import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { RuleFileError } from '@gpualert/rules';
import { TemplateError, TemplateSet } from './go-template.ts';
import { MAX_TEMPLATE_CHARS } from './go-template-parse.ts';
import { defaultTemplateSet } from './receiver-templates.ts';

/** Template files one routes file may load: Alertmanager setups keep a handful. */
export const MAX_TEMPLATE_FILES = 64;
/** All of them together: 1 MiB is far above any real set of templates. */
export const MAX_TEMPLATE_BYTES_TOTAL = 1024 * 1024;

/** Go's filepath.Match for one name: `*`, `?`, `[…]` classes (no separators inside), `\\` escapes. */
function globRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern.charAt(i);
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '\\' && i + 1 < pattern.length) out += pattern.charAt(++i).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) throw new Error(`syntax error in pattern ${JSON.stringify(pattern)}`);
      const body = pattern.slice(i + 1, end);
      out += `[${body.startsWith('^') ? `^${body.slice(1).replace(/\\/g, '\\\\')}` : body.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else out += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`, 'u');
}

/** The files a `templates:` glob names, relative to the routes file's directory (wildcards in the last part only). */
export function expandGlob(glob: string, relativeTo: string): string[] {
  const full = isAbsolute(glob) ? glob : resolve(relativeTo, glob);
  const dir = dirname(full);
  if (/[*?[]/.test(dir)) throw new Error(`wildcards are supported in the file name only, not in directories (${JSON.stringify(glob)})`);
  const name = basename(full);
  if (!/[*?[]/.test(name)) {
    try {
      return statSync(full).isFile() ? [full] : [];
    } catch {
      return []; // as Alertmanager: a glob that matches nothing is no error
    }
  }
  const re = globRegExp(name);
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries
    .filter((e) => re.test(e))
    .sort()
    .map((e) => join(dir, e))
    .filter((f) => statSync(f).isFile());
}

/**
 * Alertmanager's default templates and the `templates:` files (each glob relative to the routes
 * file), bounded in count and size: the set, or one error per bad file with its line.
 */
export function loadTemplateFiles(globs: readonly string[], routesFile: string): { set: TemplateSet; errors: RuleFileError[] } {
  const set = new TemplateSet();
  for (const [name, d] of defaultTemplateSet().defined) set.defined.set(name, d);
  const errors: RuleFileError[] = [];
  let total = 0;
  const files: string[] = [];
  for (const [i, glob] of globs.entries()) {
    try {
      for (const f of expandGlob(glob, dirname(routesFile))) if (!files.includes(f)) files.push(f);
    } catch (error) {
      errors.push({ file: routesFile, line: 0, field: `templates.${i}`, message: (error as Error).message });
    }
  }
  if (files.length > MAX_TEMPLATE_FILES) {
    errors.push({ file: routesFile, line: 0, field: 'templates', message: `the globs name ${files.length} files; at most ${MAX_TEMPLATE_FILES}` });
    return { set, errors };
  }
  for (const file of files) {
    let text: string;
    try {
      const size = statSync(file).size;
      total += size;
      if (size > MAX_TEMPLATE_CHARS || total > MAX_TEMPLATE_BYTES_TOTAL) {
        errors.push({
          file,
          line: 0,
          field: '',
          message: `too large: templates may be ${MAX_TEMPLATE_CHARS} bytes a file and ${MAX_TEMPLATE_BYTES_TOTAL} in all`,
        });
        continue;
      }
      text = readFileSync(file, 'utf8');
    } catch (error) {
      errors.push({ file, line: 0, field: '', message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` });
      continue;
    }
    try {
      set.add(text, { file, line: 1 });
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      errors.push({ file, line: error.line, field: '', message: `template: ${error.message}` });
    }
  }
  return { set, errors };
}
