import { stringifyPaced } from './paced-json.ts';
import { z } from 'zod';

/**
 * State a service saves and reads back later, perhaps by another version of gpualert: the
 * notifier's state, silences, the outbox, collectors' cursors. Each is written as JSON with a
 * `version` beside its fields; on read it is validated against its schema, an older version is
 * migrated, and one that cannot be (damaged, hostile, from a newer gpualert, over its bounds) is
 * reported so the caller rebuilds it with one log line. Never a bare cast, never a crash.
 */
export interface VersionedState<T> {
  /** What it is, for the log line: `notifier state`, `silence`, `outbox entry`, `kernel cursor`. */
  readonly name: string;
  /** The version written now. */
  readonly version: number;
  /** The current version's fields (without `version`). */
  readonly schema: z.ZodType<T>;
  /**
   * Turns what an older version wrote (version 0: gpualert before versioned state, which wrote
   * none) into the current version's fields; undefined when it cannot. The result is validated.
   */
  readonly migrate: (raw: unknown, from: number) => unknown;
  /** The most characters read: past it the text is not parsed at all. */
  readonly maxChars: number;
}

export type LoadedState<T> =
  | { readonly ok: true; readonly value: T; readonly migratedFrom?: number }
  | { readonly ok: false; readonly reason: string; /** Written by a newer gpualert: skip it, but leave it for that version. */ readonly newer?: true };

/** The text to save: the value's fields and the version, `version` first. */
export function encodeVersioned<T extends object>(spec: VersionedState<T>, value: T): string {
  return JSON.stringify({ version: spec.version, ...value });
}

/** `encodeVersioned` for a value that may be megabytes (a storm's notification): written in slices, yielding to the event loop between (paced-json.ts). */
export function encodeVersionedPaced<T extends object>(spec: VersionedState<T>, value: T): Promise<string> {
  return stringifyPaced({ version: spec.version, ...value });
}

/** Like `encodeVersioned`, for state whose value is not an object (a cursor's number): `{version, value}`. */
export function encodeVersionedValue<T>(spec: VersionedState<T>, value: T): string {
  return JSON.stringify({ version: spec.version, value });
}

const MAX_REASON_CHARS = 300;

/**
 * Reads saved text back: `{version: N, …}` of the current version is validated; an older one
 * (text without `version` is version 0) goes through `migrate`; anything else is a reason to
 * rebuild. `unwrap` picks the value out of the versioned object (for `encodeVersionedValue`).
 */
export function decodeVersioned<T>(spec: VersionedState<T>, text: string, unwrap?: (versioned: Record<string, unknown>) => unknown): LoadedState<T> {
  const fail = (reason: string): LoadedState<T> => ({
    ok: false,
    reason: reason.length <= MAX_REASON_CHARS ? reason : `${reason.slice(0, MAX_REASON_CHARS - 1)}…`,
  });
  if (text.length > spec.maxChars) return fail(`${text.length} characters, over the bound of ${spec.maxChars}`);
  let raw: unknown;
  let notJson: string | undefined;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    // Not JSON: an older version may have written a plain value, which its migration may read.
    raw = text;
    notJson = error instanceof Error ? error.message : String(error);
  }
  const isObject = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
  const declared = isObject ? (raw as Record<string, unknown>).version : undefined;
  const version = declared === undefined ? 0 : declared;
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0)
    return fail(`version ${JSON.stringify(version)?.slice(0, 40)} is not a version`);
  if (version > spec.version)
    return { ok: false, reason: `version ${version} was written by a newer gpualert (this one reads up to ${spec.version})`, newer: true };
  let body: unknown;
  if (version === spec.version) {
    const { version: _, ...rest } = raw as Record<string, unknown>;
    body = unwrap ? unwrap(rest) : rest;
  } else {
    body = spec.migrate(raw, version);
    if (body === undefined) return fail(notJson === undefined ? `version ${version} cannot be migrated to ${spec.version}` : `not JSON: ${notJson}`);
  }
  const parsed = spec.schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue !== undefined && issue.path.length > 0 ? issue.path.map((p) => String(p).slice(0, 80)).join('.') : '(top)';
    return fail(`version ${version}: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  return version === spec.version ? { ok: true, value: parsed.data } : { ok: true, value: parsed.data, migratedFrom: version };
}

/**
 * A record keyed by outside data (fingerprints, group keys, label names) as saved state holds it:
 * at most `max` keys, each value validated, read into a null-prototype record, so `__proto__` or
 * `constructor` is only ever a key (zod's own record drops `__proto__`).
 */
export function savedRecord<S extends z.ZodType>(value: S, max: number): z.ZodType<Record<string, z.output<S>>> {
  return z.unknown().transform((raw, ctx) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      ctx.addIssue({ code: 'custom', message: 'expected an object' });
      return z.NEVER;
    }
    const keys = Object.keys(raw);
    if (keys.length > max) {
      ctx.addIssue({ code: 'custom', message: `${keys.length} entries, over the bound of ${max}` });
      return z.NEVER;
    }
    const out: Record<string, z.output<S>> = Object.create(null);
    for (const key of keys) {
      const result = value.safeParse((raw as Record<string, unknown>)[key]);
      if (!result.success) {
        const issue = result.error.issues[0];
        ctx.addIssue({
          code: 'custom',
          path: [key, ...(issue?.path ?? []).map((p) => (typeof p === 'symbol' ? String(p) : p))],
          message: issue?.message ?? 'invalid',
        });
        return z.NEVER;
      }
      out[key] = result.data;
    }
    return out;
  }) as unknown as z.ZodType<Record<string, z.output<S>>>;
}
