import {
  inertRecord,
  MAX_GPU_INDEX,
  MAX_JOB_EVENT_FIELDS,
  MAX_JOB_FIELD_TEXT_LENGTH,
  MAX_JOB_MESSAGE_LENGTH,
  MAX_JOB_RANK,
  type JobEventData,
  type JobEventKind,
} from '@gpualert/schema';
import type { JobPattern } from './job-patterns.ts';

/**
 * The longest line a pattern is run on: a progress bar redrawn without newlines runs to a few KiB;
 * past 16 KiB the rest is cut, so one runaway line costs what any other does.
 */
export const MAX_JOB_LINE_LENGTH = 16 * 1024;

/** What one line said, per the first pattern that matched it. */
export interface JobLineMatch {
  readonly pattern: string;
  readonly kind: JobEventKind;
  readonly rank?: number;
  readonly gpu?: number;
  readonly step?: number;
  readonly stepTimeMs?: number;
  readonly checkpoint?: 'ok' | 'failed';
  readonly exitCode?: number;
  readonly fields: Record<string, number | string>;
  readonly message: string;
}

const NUMBER = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
/** A whole number in groups of three: `7,282`, `193,831`. */
const GROUPED = /^\d{1,3}(?:,\d{3})+$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_./-]{0,63}$/;
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/**
 * The first pattern (in file order) whose literal the line holds and whose regex matches it;
 * `undefined` when none does. Pure: the same line and patterns give the same answer.
 */
export function matchJobLine(line: string, patterns: readonly JobPattern[]): JobLineMatch | undefined {
  const text = cut(line);
  for (const p of patterns) {
    if (!text.includes(p.contains)) continue;
    const m = p.regex.matcher(text);
    if (!m.find()) continue;
    return fromGroups(p, text, (n) => m.group(n));
  }
  return undefined;
}

/**
 * Which pattern a line is (its index, or -1), without reading its groups: RE2's capture-free
 * match is several times cheaper. The collector reads the groups only of the lines it publishes
 * (every failure, the newest progress line), so a log of progress lines costs this per line.
 */
export function classifyJobLine(line: string, patterns: readonly JobPattern[]): number {
  const text = cut(line);
  let i = 0;
  for (const p of patterns) {
    if (text.includes(p.contains) && p.regex.test(text)) return i;
    i += 1;
  }
  return -1;
}

/**
 * The collector's pass over a line: progress (`step`) lines are only recognised (read later, if
 * at all: one is published per interval), every other kind is read at once, in one match.
 */
export function recogniseJobLine(
  line: string,
  patterns: readonly JobPattern[],
): { readonly pattern: JobPattern; readonly text: string; readonly match?: JobLineMatch } | undefined {
  const text = cut(line);
  for (const p of patterns) {
    if (!text.includes(p.contains)) continue;
    if (p.kind === 'step') {
      if (p.regex.test(text)) return { pattern: p, text };
      continue;
    }
    const m = p.regex.matcher(text);
    if (m.find()) return { pattern: p, text, match: fromGroups(p, text, (n) => m.group(n)) };
  }
  return undefined;
}

/** What a line says per one pattern (`classifyJobLine`'s answer); `undefined` if it does not match it. */
export function readJobLine(line: string, pattern: JobPattern): JobLineMatch | undefined {
  const text = cut(line);
  const m = pattern.regex.matcher(text);
  return m.find() ? fromGroups(pattern, text, (n) => m.group(n)) : undefined;
}

function cut(line: string): string {
  return line.length > MAX_JOB_LINE_LENGTH ? line.slice(0, MAX_JOB_LINE_LENGTH) : line;
}

function fromGroups(p: JobPattern, text: string, group: (n: number) => string | null): JobLineMatch {
  const fields = inertRecord<number | string>();
  let count = 0;
  const put = (name: string, value: string) => {
    if (count >= MAX_JOB_EVENT_FIELDS || !FIELD_NAME.test(name) || name in fields) return;
    const v = value.trim();
    if (v === '') return;
    // `193,831` (torchtitan's tps) is a number with thousands separators.
    const n = GROUPED.test(v) ? v.replace(/,/g, '') : v;
    fields[name] = NUMBER.test(n) && Number.isFinite(Number(n)) ? Number(n) : v.slice(0, MAX_JOB_FIELD_TEXT_LENGTH);
    count += 1;
  };
  let rank: number | undefined;
  let gpu: number | undefined;
  let step: number | undefined;
  let stepTimeMs: number | undefined;
  let exitCode: number | undefined;
  for (const [name, n] of p.groups) {
    const value = group(n);
    if (value === null) continue;
    switch (name) {
      case 'rank':
        rank = whole(value, MAX_JOB_RANK);
        break;
      case 'gpu':
        gpu = whole(value, MAX_GPU_INDEX);
        break;
      case 'step':
        step = whole(value, Number.MAX_SAFE_INTEGER);
        break;
      case 'step_time_ms':
        stepTimeMs = positive(value);
        break;
      case 'step_time_s': {
        const s = positive(value);
        if (s !== undefined) stepTimeMs = s * 1000;
        break;
      }
      case 'it_per_s': {
        const r = positive(value);
        if (r !== undefined && r > 0) stepTimeMs = 1000 / r;
        break;
      }
      case 'exit_code': {
        const c = Number(value);
        if (Number.isSafeInteger(c)) exitCode = c;
        break;
      }
      case 'pairs':
        for (const [k, v] of pairsOf(value)) put(k, v);
        break;
      default:
        put(name, value);
    }
  }
  // A progress bar's postfix names the step as `global_step=794.0` (Lightning, NeMo): when no `step`
  // group said one, that whole number is the step.
  const globalStep = fields.global_step;
  if (step === undefined && typeof globalStep === 'number' && Number.isSafeInteger(globalStep) && globalStep >= 0) step = globalStep;
  return {
    pattern: p.name,
    kind: p.kind,
    fields,
    message: messageOf(text),
    ...(rank !== undefined ? { rank } : {}),
    ...(gpu !== undefined ? { gpu } : {}),
    ...(step !== undefined ? { step } : {}),
    ...(stepTimeMs !== undefined ? { stepTimeMs: Math.round(stepTimeMs * 1000) / 1000 } : {}),
    ...(p.checkpoint ? { checkpoint: p.checkpoint } : {}),
    ...(exitCode !== undefined ? { exitCode } : {}),
  };
}

function whole(value: string, max: number): number | undefined {
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 0 && n <= max ? n : undefined;
}

function positive(value: string): number | undefined {
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** The line as a person reads it: trimmed, control characters blanked, cut to the bound. */
function messageOf(text: string): string {
  const t = text.trim().replace(CONTROL, ' ');
  return t.length > MAX_JOB_MESSAGE_LENGTH ? `${t.slice(0, MAX_JOB_MESSAGE_LENGTH - 1)}…` : t;
}

/**
 * `'loss': 6.26, 'learning_rate': 0.001` (a Python dict's items) or `loss=2.6, v_num=95nc` (a
 * progress bar's postfix): split on commas, each at its first `:` or `=`; quotes dropped. At most
 * `MAX_JOB_EVENT_FIELDS` pairs are looked at.
 */
export function pairsOf(text: string): [string, string][] {
  const out: [string, string][] = [];
  let start = 0;
  while (start < text.length && out.length < MAX_JOB_EVENT_FIELDS) {
    let end = text.indexOf(',', start);
    if (end === -1) end = text.length;
    const piece = text.slice(start, end);
    start = end + 1;
    const colon = piece.indexOf(':');
    const equals = piece.indexOf('=');
    const at = colon === -1 ? equals : equals === -1 ? colon : Math.min(colon, equals);
    if (at <= 0) continue;
    const key = unquote(piece.slice(0, at));
    const value = unquote(piece.slice(at + 1));
    if (key !== '' && value !== '') out.push([key, value]);
  }
  return out;
}

function unquote(s: string): string {
  let t = s.trim();
  if (t.startsWith('{')) t = t.slice(1).trim();
  if (t.endsWith('}')) t = t.slice(0, -1).trim();
  if (t.length >= 2 && (t[0] === "'" || t[0] === '"') && t[t.length - 1] === t[0]) t = t.slice(1, -1);
  return t;
}

/** Where a job's lines come from and what to say when a line does not: the job, and a default rank and GPU. */
export interface JobLogContext {
  readonly job: string;
  readonly rank?: number;
  readonly gpu?: number;
}

/** A match as the `job.event` data it publishes: what the line says wins over the context's defaults. */
export function toJobEventData(match: JobLineMatch, context: JobLogContext): JobEventData {
  const rank = match.rank ?? context.rank;
  const gpu = match.gpu ?? context.gpu;
  return {
    job: context.job,
    kind: match.kind,
    message: match.message,
    pattern: match.pattern,
    ...(rank !== undefined ? { rank } : {}),
    ...(gpu !== undefined ? { gpu } : {}),
    ...(match.step !== undefined ? { step: match.step } : {}),
    ...(match.stepTimeMs !== undefined ? { step_time_ms: match.stepTimeMs } : {}),
    ...(match.checkpoint ? { checkpoint: match.checkpoint } : {}),
    ...(match.exitCode !== undefined ? { exit_code: match.exitCode } : {}),
    ...(Object.keys(match.fields).length > 0 ? { fields: match.fields } : {}),
  };
}

/** A line's carriage-return redraws (a progress bar's), each read as a line of its own; most lines have one. */
export function redrawsOf(line: string): string[] {
  if (!line.includes('\r')) return [line];
  const parts = line.split('\r');
  return parts.filter((p, i) => p !== '' || i === parts.length - 1);
}

/** A whole log, offline (`gpualert parse job`): each event with its 1-based line number. */
export function parseJobLog(
  text: string,
  patterns: readonly JobPattern[],
  context: JobLogContext,
): { events: { line: number; data: JobEventData }[]; lines: number } {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const events: { line: number; data: JobEventData }[] = [];
  lines.forEach((line, i) => {
    for (const part of redrawsOf(line)) {
      const match = matchJobLine(part, patterns);
      if (match) events.push({ line: i + 1, data: toJobEventData(match, context) });
    }
  });
  return { events, lines: lines.length };
}
