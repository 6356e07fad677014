import { matchesEmpty, parseMatchers, type Matcher } from './matchers.ts';

/** The longest silence: a quarter is enough for any maintenance; longer is a forgotten mute (Alertmanager has no cap; we do). */
export const MAX_SILENCE_MS = 90 * 86_400_000;
/** The shortest silence: under a second it would end before the notifier's next look (1 s); shorter is a typo. */
export const MIN_SILENCE_MS = 1_000;
/** Matchers per silence: a handful in practice; the cap keeps a silence check cheap on the hot path. */
export const MAX_SILENCE_MATCHERS = 32;
/** Comment and author lengths: enough for a ticket link and a sentence, short enough for a chat line. */
export const MAX_SILENCE_COMMENT = 1024;
export const MAX_SILENCE_AUTHOR = 256;

export interface SilenceInput {
  readonly matchers: readonly string[];
  readonly durationMs: number;
  readonly createdBy: string;
  readonly comment: string;
  readonly startsAt?: number;
}

export interface CheckedSilence {
  readonly matchers: string[];
  readonly startsAt: number;
  readonly endsAt: number;
  readonly createdBy: string;
  readonly comment: string;
}

/**
 * What makes a silence acceptable, as Alertmanager has it and more: an author, a reason, a bounded
 * length whose end is a real date, matchers that parse, and at least one matcher that does not
 * match the empty string (else it would silence everything). One line saying what is wrong.
 */
export function checkSilence(input: SilenceInput, now: number): { ok: true; value: CheckedSilence } | { ok: false; error: string } {
  const fail = (error: string) => ({ ok: false as const, error });
  if (!Array.isArray(input.matchers) || input.matchers.length === 0) return fail('a silence needs at least one matcher (--match)');
  if (input.matchers.length > MAX_SILENCE_MATCHERS) return fail(`a silence takes at most ${MAX_SILENCE_MATCHERS} matchers (got ${input.matchers.length})`);
  const parsed: Matcher[] = [];
  for (const text of input.matchers) {
    // One item may be a list (`{a="1", b=~"2"}`), as amtool and Alertmanager's API take it.
    const list = parseMatchers(text);
    if (typeof list === 'string') return fail(list);
    parsed.push(...list);
  }
  if (parsed.length === 0) return fail('a silence needs at least one matcher (--match)');
  if (parsed.length > MAX_SILENCE_MATCHERS) return fail(`a silence takes at most ${MAX_SILENCE_MATCHERS} matchers (got ${parsed.length})`);
  if (parsed.every(matchesEmpty)) {
    return fail('a silence needs at least one matcher that does not match the empty string: as written it would silence every alert');
  }
  if (typeof input.createdBy !== 'string' || !input.createdBy.trim()) return fail('a silence needs an author (created_by, --author)');
  if (input.createdBy.length > MAX_SILENCE_AUTHOR) return fail(`the author is longer than ${MAX_SILENCE_AUTHOR} characters`);
  if (typeof input.comment !== 'string' || !input.comment.trim()) return fail('a silence needs a comment saying why (--comment)');
  if (input.comment.length > MAX_SILENCE_COMMENT) return fail(`the comment is longer than ${MAX_SILENCE_COMMENT} characters`);
  const duration = input.durationMs;
  if (typeof duration !== 'number' || !Number.isFinite(duration) || !(duration > 0))
    return fail('a silence needs a positive, finite duration (duration_seconds, --for)');
  if (duration < MIN_SILENCE_MS) return fail(`a silence lasts at least ${MIN_SILENCE_MS / 1000} s`);
  if (duration > MAX_SILENCE_MS) return fail(`a silence lasts at most ${MAX_SILENCE_MS / 86_400_000} days (got ${formatDays(duration)})`);
  const startsAt = input.startsAt ?? now;
  const endsAt = Math.round(startsAt + duration);
  if (!Number.isFinite(startsAt) || Number.isNaN(new Date(endsAt).getTime())) return fail('the silence would not end at a valid date');
  return { ok: true, value: { matchers: [...input.matchers], startsAt, endsAt, createdBy: input.createdBy.trim(), comment: input.comment } };
}

function formatDays(ms: number): string {
  const days = ms / 86_400_000;
  return days < 1e6 ? `${Math.round(days * 10) / 10} days` : `${days.toExponential(1)} days`;
}
