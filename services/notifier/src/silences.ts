import { randomUUID } from 'node:crypto';
import type { Logger } from '@gpualert/log';
import { checkSilence, dict, formatMatcher, MAX_SAVED_SILENCES, SILENCE, silenceMatchers, type Dict, type Silence, type SilenceInput } from '@gpualert/notify';
import { decodeVersioned, encodeVersioned, GpualertError } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';

export const SILENCES_KEY = 'notifier:silences';

/** A silence that cannot be stored: one line saying why (the API answers it with 4xx, the CLI with exit 2). */
export class SilenceError extends GpualertError {
  constructor(message: string) {
    super('GA-SILENCE-INVALID', message);
  }
}

/** A silence as the silences hash holds it: versioned JSON (schema and bounds in @gpualert/notify's saved-notifier-state.ts). */
export function encodeSilence(silence: Silence): string {
  return encodeVersioned(SILENCE, silence);
}

/** How many unreadable entries one warning line names (the count is always whole). */
const MAX_NAMED_IN_WARNING = 5;

/**
 * Silences live in the store: the CLI, the HTTP API and the notifier share them. Each is validated
 * (an older version migrated); one that does not read (damaged, hostile, from a newer gpualert) is
 * skipped. At most MAX_SAVED_SILENCES are loaded: those that end last, so the active ones stay.
 * With a `log` (the notifier at start), the unreadable ones are deleted from the store (those a
 * newer gpualert wrote are only skipped) and named in one warning line, `state_rebuilt`.
 */
export async function loadSilences(store: StateStore, log?: Logger): Promise<Dict<Silence>> {
  const all = await store.hashGetAll(SILENCES_KEY);
  const good: Silence[] = [];
  const bad: { id: string; reason: string; newer: boolean }[] = [];
  for (const [id, text] of Object.entries(all)) {
    const loaded = decodeVersioned(SILENCE, text);
    if (loaded.ok && loaded.value.id === id) good.push(loaded.value);
    else
      bad.push({
        id,
        reason: loaded.ok ? `its id is ${JSON.stringify(loaded.value.id.slice(0, 40))}` : loaded.reason,
        newer: !loaded.ok && loaded.newer === true,
      });
  }
  good.sort((a, b) => b.endsAt - a.endsAt);
  const dropped = good.length > MAX_SAVED_SILENCES ? good.length - MAX_SAVED_SILENCES : 0;
  if (log && (bad.length > 0 || dropped > 0)) {
    // A silence a newer gpualert wrote (a rolling upgrade) is skipped here but kept for it.
    const unreadable = bad.filter((b) => !b.newer).map((b) => b.id);
    if (unreadable.length > 0) await store.hashDelete(SILENCES_KEY, ...unreadable);
    log.warn(
      {
        key: SILENCES_KEY,
        unreadable: bad.length,
        over_bound: dropped,
        bound: MAX_SAVED_SILENCES,
        examples: bad.slice(0, MAX_NAMED_IN_WARNING).map((b) => `${b.id.slice(0, 80)}: ${b.reason}`),
      },
      'state_rebuilt',
    );
  }
  return dict(good.slice(0, MAX_SAVED_SILENCES).map((s) => [s.id, s] as const));
}

export type NewSilence = SilenceInput;

/** Every silence has a bounded end, an author, a comment, and a matcher that does not match everything; nothing is stored otherwise. */
export async function addSilence(store: StateStore, input: NewSilence, now: number): Promise<Silence> {
  const checked = checkSilence(input, now);
  if (!checked.ok) throw new SilenceError(checked.error);
  const silence: Silence = { id: randomUUID().slice(0, 8), ...checked.value };
  await store.hashSet(SILENCES_KEY, { [silence.id]: encodeSilence(silence) });
  return silence;
}

/** One silence by its id, read alone; undefined when there is none (or what is stored under it does not read as one). */
export async function readSilence(store: StateStore, id: string): Promise<Silence | undefined> {
  const text = await store.hashGet(SILENCES_KEY, id);
  if (!text) return undefined;
  const loaded = decodeVersioned(SILENCE, text);
  return loaded.ok && loaded.value.id === id ? loaded.value : undefined;
}

/** Ends a silence now; undefined when there is none by that id (or what is stored under it does not read as one). */
export async function expireSilence(store: StateStore, id: string, now: number): Promise<Silence | undefined> {
  const silence = await readSilence(store, id);
  if (!silence) return undefined;
  if (silence.expiredAt === undefined) {
    silence.expiredAt = now;
    silence.endsAt = Math.min(silence.endsAt, now);
    await store.hashSet(SILENCES_KEY, { [id]: encodeSilence(silence) });
  }
  return silence;
}

/**
 * Whether Alertmanager would change this silence in place rather than expire it and make a new one
 * (silence/silence.go, canUpdate): the same matchers, and by its state now: an active one keeps its
 * start and may not end in the past, a pending one may not start in the past, an expired one never.
 */
export function canUpdateInPlace(
  existing: Silence,
  next: { readonly matchers: readonly string[]; readonly startsAt: number; readonly endsAt: number },
  now: number,
): boolean {
  // The same matchers however written (`host=a` from the CLI is `host="a"` from amtool).
  const was = silenceMatchers(existing.matchers)?.map(formatMatcher);
  const is = silenceMatchers(next.matchers)?.map(formatMatcher);
  if (!was || !is || was.length !== is.length || was.some((m, i) => m !== is[i])) return false;
  if (existing.expiredAt !== undefined || existing.endsAt <= now) return false;
  if (existing.startsAt > now) return next.startsAt >= now;
  return next.startsAt === existing.startsAt && next.endsAt >= now;
}

/** Changes a silence in place, keeping its id (the caller checked `canUpdateInPlace`); validated as a new one is. */
export async function updateSilence(store: StateStore, existing: Silence, input: NewSilence, now: number): Promise<Silence> {
  const checked = checkSilence(input, now);
  if (!checked.ok) throw new SilenceError(checked.error);
  const silence: Silence = { ...existing, ...checked.value, id: existing.id };
  await store.hashSet(SILENCES_KEY, { [silence.id]: encodeSilence(silence) });
  return silence;
}
