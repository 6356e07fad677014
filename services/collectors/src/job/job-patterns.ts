import { bundledPath, loadYamlFile, parseYamlText, type LoadResult } from '@gpualert/rules';
import { JobEventKind, MAX_JOB_FIELD_NAME_LENGTH, type JobEventKind as Kind } from '@gpualert/schema';
import { RE2JS } from 're2js';
import { z } from 'zod';

/** Patterns in one file: the bundled defaults are two dozen; a site adds a few. */
export const MAX_JOB_PATTERNS = 256;
/** A pattern's regex: compiling is linear in it; 4 KiB is far more than any log line's shape needs. */
export const MAX_JOB_REGEX_LENGTH = 4_096;
/** The literal every matching line holds: a phrase, not a paragraph. */
export const MAX_JOB_CONTAINS_LENGTH = 256;

/**
 * Named groups that fill the event's own fields; `pairs` is read as `'key': value` or `key=value`
 * pairs (a Hugging Face Trainer dict, a progress bar's postfix). Any other name becomes an entry
 * of the event's `fields`.
 */
export const EVENT_GROUPS = ['rank', 'gpu', 'step', 'step_time_ms', 'step_time_s', 'it_per_s', 'exit_code', 'pairs'] as const;

const NAME = /^[a-z][a-z0-9_]*$/;

const JobPatternEntry = z.object({
  name: z.string().min(1).max(MAX_JOB_FIELD_NAME_LENGTH).regex(NAME, 'expected lower-case letters, digits and _'),
  kind: JobEventKind,
  /** A literal every line the regex matches holds, case and all: lines without it skip the regex. */
  contains: z.string().min(1).max(MAX_JOB_CONTAINS_LENGTH),
  /** RE2 syntax (linear time); named groups `(?P<name>…)` carry what the line says. */
  regex: z.string().min(1).max(MAX_JOB_REGEX_LENGTH),
  /** With kind `checkpoint`: whether a line of this shape means the checkpoint was written. */
  checkpoint: z.enum(['ok', 'failed']).optional(),
  /** Why the pattern exists and where its line comes from. */
  about: z.string().optional(),
});
export type JobPatternEntry = z.infer<typeof JobPatternEntry>;

export const JobPatternsFile = z.object({ patterns: z.array(JobPatternEntry).min(1).max(MAX_JOB_PATTERNS) }).check((ctx) => {
  const seen = new Set<string>();
  ctx.value.patterns.forEach((p, i) => {
    if (seen.has(p.name)) ctx.issues.push({ code: 'custom', message: `pattern ${p.name} appears twice`, input: p.name, path: ['patterns', i, 'name'] });
    seen.add(p.name);
    if ((p.kind === 'checkpoint') !== (p.checkpoint !== undefined)) {
      ctx.issues.push({
        code: 'custom',
        message: p.kind === 'checkpoint' ? 'a checkpoint pattern says checkpoint: ok or failed' : 'only a checkpoint pattern has checkpoint:',
        input: p.checkpoint,
        path: ['patterns', i, 'checkpoint'],
      });
    }
    const problem = regexProblem(p.regex);
    if (problem) ctx.issues.push({ code: 'custom', message: problem, input: p.regex, path: ['patterns', i, 'regex'] });
  });
});

/** One pattern, compiled: the literal filter first, then RE2 with its named groups. */
export interface JobPattern {
  readonly name: string;
  readonly kind: Kind;
  readonly contains: string;
  readonly regex: RE2JS;
  /** Named group → group number, in the order of the pattern. */
  readonly groups: readonly (readonly [string, number])[];
  readonly checkpoint?: 'ok' | 'failed';
}

function regexProblem(source: string): string | undefined {
  try {
    RE2JS.compile(source);
    return undefined;
  } catch (error) {
    return `not an RE2 regex: ${error instanceof Error ? error.message : String(error)}`;
  }
}

export function compileJobPatterns(entries: readonly JobPatternEntry[]): JobPattern[] {
  return entries.map((e) => {
    const regex = RE2JS.compile(e.regex);
    const groups = Object.entries(regex.namedGroups()).sort((a, b) => a[1] - b[1]);
    return { name: e.name, kind: e.kind, contains: e.contains, regex, groups, ...(e.checkpoint ? { checkpoint: e.checkpoint } : {}) };
  });
}

export const DEFAULT_JOB_PATTERNS_PATH = bundledPath('rules/job-patterns.yaml');

/** Loads and compiles a patterns file; every error names the file, the line and the field. */
export function loadJobPatterns(path: string = DEFAULT_JOB_PATTERNS_PATH): LoadResult<JobPattern[]> {
  const result = loadYamlFile(path, JobPatternsFile);
  return result.ok ? { ok: true, value: compileJobPatterns(result.value.patterns) } : result;
}

/** The same from text (tests, `rules check`). */
export function parseJobPatterns(file: string, text: string): LoadResult<JobPattern[]> {
  const result = parseYamlText(file, text, JobPatternsFile);
  return result.ok ? { ok: true, value: compileJobPatterns(result.value.patterns) } : result;
}
