import type { z } from 'zod';
import { MAX_GPUS_PER_SAMPLE, MAX_HOSTS_PER_PROVIDER_EVENT } from './bounds.ts';
import { toInertRecord } from './inert-record.ts';
import { Envelope } from './envelope.ts';
import { isCanonicalGpuSample } from './gpu-sample-fast-path.ts';

/** Why bytes are not an envelope: where (a JSON path), what was expected and what came. */
export interface EnvelopeError {
  readonly code: 'not_utf8' | 'not_json' | 'invalid';
  /** Dotted path into the JSON, e.g. `data.gpus.0.temp_c`; empty for the whole message. */
  readonly path: string;
  readonly expected: string;
  readonly got: string;
  /** One line for a person: `data.gpus.0.temp_c: expected number, got string "hot"`. */
  readonly message: string;
}

export type ParseResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: EnvelopeError };

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Parses one message. Never throws on bad input: every failure is an `EnvelopeError`. */
export function parseEnvelope(bytes: Uint8Array | string): ParseResult<Envelope> {
  let text: string;
  if (typeof bytes === 'string') {
    text = bytes;
  } else {
    try {
      text = decoder.decode(bytes);
    } catch {
      return failure('not_utf8', '', 'UTF-8 text', `${bytes.length} bytes that are not UTF-8`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return failure('not_json', '', 'one JSON object', `${describeText(text)} (${detail})`);
  }
  return validateEnvelope(json);
}

/** Validates an already decoded JSON value as an envelope. */
export function validateEnvelope(json: unknown): ParseResult<Envelope> {
  if (isCanonicalGpuSample(json)) return { ok: true, value: { ...json, labels: toInertRecord(json.labels) } };
  const tooLong = oversizedList(json);
  if (tooLong) return tooLong;
  const result = Envelope.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  if (!issue) return failure('invalid', '', 'an envelope', describeValue(json));
  return fromIssue(issue, json);
}

/**
 * The lists with a bound, refused before the schema reads their elements: zod checks an array's
 * length after parsing every element, so 20,000 GPUs would cost their full parse to be refused.
 */
function oversizedList(json: unknown): ParseResult<never> | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const { type, data } = json as { type?: unknown; data?: unknown };
  if (typeof data !== 'object' || data === null) return undefined;
  const [field, max] =
    type === 'gpu.sample' ? (['gpus', MAX_GPUS_PER_SAMPLE] as const) : type === 'provider.event' ? (['hosts', MAX_HOSTS_PER_PROVIDER_EVENT] as const) : [];
  if (field === undefined) return undefined;
  const list = (data as Record<string, unknown>)[field];
  return Array.isArray(list) && list.length > max ? failure('invalid', `data.${field}`, `array of at most ${max}`, describeValue(list)) : undefined;
}

function fromIssue(issue: z.core.$ZodIssue, root: unknown): ParseResult<never> {
  const at = valueAt(root, issue.path);
  // A path segment is a key from the input, which may be a label name of any length: shortened like a value.
  const path = issue.path.map((segment) => truncate(String(segment))).join('.');
  return failure('invalid', path, expectedOf(issue), describeValue(at));
}

function expectedOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected;
    case 'invalid_value':
      return `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_union':
      if ('discriminator' in issue && typeof issue.discriminator === 'string') {
        return `a known "${issue.discriminator}"`;
      }
      return 'one of the allowed shapes';
    case 'too_small':
      return `${issue.origin} of at least ${String(issue.minimum)}`;
    case 'too_big':
      return `${issue.origin} of at most ${String(issue.maximum)}`;
    case 'invalid_format':
      return issue.format === 'datetime' ? 'an ISO-8601 timestamp' : issue.message;
    default:
      return issue.message;
  }
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `string ${JSON.stringify(truncate(value))}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

function describeText(text: string): string {
  return text.trim() === '' ? 'an empty message' : `text ${JSON.stringify(truncate(text))}`;
}

function truncate(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function failure(code: EnvelopeError['code'], path: string, expected: string, got: string): ParseResult<never> {
  const where = path === '' ? 'message' : path;
  return { ok: false, error: { code, path, expected, got, message: `${where}: expected ${expected}, got ${got}` } };
}
