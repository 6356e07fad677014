import { randomUUID } from 'node:crypto';
import { parseMatcher, type Silence } from '@gpualert/notify';
import type { StateStore } from '@gpualert/state';

export const SILENCES_KEY = 'notifier:silences';

/** Silences live in the store: the CLI, the HTTP API and the notifier share them. */
export async function loadSilences(store: StateStore): Promise<Record<string, Silence>> {
  const all = await store.hashGetAll(SILENCES_KEY);
  return Object.fromEntries(Object.entries(all).map(([id, text]) => [id, JSON.parse(text) as Silence]));
}

export interface NewSilence {
  readonly matchers: readonly string[];
  readonly durationMs: number;
  readonly createdBy: string;
  readonly comment: string;
  readonly startsAt?: number;
}

/** Every silence has an end, an author and a comment; a matcher that does not parse is refused. */
export async function addSilence(store: StateStore, input: NewSilence, now: number): Promise<Silence> {
  if (input.matchers.length === 0) throw new Error('a silence needs at least one --match');
  for (const text of input.matchers) {
    const parsed = parseMatcher(text);
    if (typeof parsed === 'string') throw new Error(parsed);
  }
  if (!input.comment.trim()) throw new Error('a silence needs a --comment saying why');
  if (!(input.durationMs > 0)) throw new Error('a silence needs a positive --for');
  const startsAt = input.startsAt ?? now;
  const silence: Silence = { id: randomUUID().slice(0, 8), matchers: [...input.matchers], startsAt, endsAt: startsAt + input.durationMs, createdBy: input.createdBy, comment: input.comment };
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
