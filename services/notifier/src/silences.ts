import { randomUUID } from 'node:crypto';
import { checkSilence, dict, type Dict, type Silence, type SilenceInput } from '@gpualert/notify';
import type { StateStore } from '@gpualert/state';

export const SILENCES_KEY = 'notifier:silences';

/** A silence that cannot be stored: one line saying why (the API answers it with 4xx, the CLI with exit 2). */
export class SilenceError extends Error {
  readonly code = 'GPUALERT_SILENCE_INVALID';
  readonly retriable = false;
}

/** Silences live in the store: the CLI, the HTTP API and the notifier share them. An entry that does not parse is skipped. */
export async function loadSilences(store: StateStore): Promise<Dict<Silence>> {
  const all = await store.hashGetAll(SILENCES_KEY);
  const out = dict<Silence>();
  for (const [id, text] of Object.entries(all)) {
    try {
      const silence = JSON.parse(text) as Silence;
      if (silence && typeof silence === 'object' && Number.isFinite(silence.endsAt) && Number.isFinite(silence.startsAt) && Array.isArray(silence.matchers)) out[id] = silence;
    } catch {
      // Not ours or damaged: a bad entry must not stop every silence from loading.
    }
  }
  return out;
}

export type NewSilence = SilenceInput;

/** Every silence has a bounded end, an author, a comment, and a matcher that does not match everything; nothing is stored otherwise. */
export async function addSilence(store: StateStore, input: NewSilence, now: number): Promise<Silence> {
  const checked = checkSilence(input, now);
  if (!checked.ok) throw new SilenceError(checked.error);
  const silence: Silence = { id: randomUUID().slice(0, 8), ...checked.value };
  await store.hashSet(SILENCES_KEY, { [silence.id]: JSON.stringify(silence) });
  return silence;
}

export async function expireSilence(store: StateStore, id: string, now: number): Promise<Silence | undefined> {
  const text = await store.hashGet(SILENCES_KEY, id);
  if (!text) return undefined;
  const silence = JSON.parse(text) as Silence;
  if (silence.expiredAt === undefined) {
    silence.expiredAt = now;
    silence.endsAt = Math.min(silence.endsAt, now);
    await store.hashSet(SILENCES_KEY, { [id]: JSON.stringify(silence) });
  }
  return silence;
}
