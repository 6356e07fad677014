import { createHash } from 'node:crypto';
import { dict, MAX_SAVED_ALERTS_PER_GROUP, type NotifierState, type Told } from '@gpualert/notify';
import { stringifyPaced } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';

/**
 * The cluster's notification log, Alertmanager's nflog kept in the shared store: per group (its
 * key names the receiver), what was last sent and when. A replica reads the entries of the groups
 * it is about to flush, and a newer one replaces what it remembers, so it does not send what
 * another replica sent; after a flush that sent, it writes its own. One key per group, named by a
 * hash of the group's key (label values are anyone's, and long), kept as long as Alertmanager
 * keeps its log (120 h) after the last write.
 */
export const NFLOG_KEY = (group: string) => hashedKey('notifier:nflog:', group);

/** A store key for any string an alert or group carries: the prefix and 32 hex of its SHA-256. */
export function hashedKey(prefix: string, text: string): string {
  return `${prefix}${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
}
const RETENTION_MS = 120 * 3_600_000;
/** Entries read or written at once; the rest wait their turn. */
const CONCURRENCY = 64;

const TOLD = z.object({ status: z.enum(['firing', 'resolved']), severity: z.enum(['info', 'warning', 'error', 'critical']), at: z.number().finite() });
const ENTRY = z.object({
  key: z.string(),
  lastSent: z.number().finite(),
  told: z.record(z.string(), TOLD).refine((r) => Object.keys(r).length <= MAX_SAVED_ALERTS_PER_GROUP, `at most ${MAX_SAVED_ALERTS_PER_GROUP} alerts`),
});

export interface NotificationLogEntry {
  readonly lastSent: number;
  readonly told: Readonly<Record<string, Told>>;
}

export class SharedNotificationLog {
  constructor(private readonly store: StateStore) {}

  /**
   * Before these groups are flushed: a group another replica sent for since this one last did
   * takes that log (what was told, when), as a replica of Alertmanager merges its peers' log. A
   * missing, unreadable or older entry leaves the group as it is. Returns how many were replaced.
   */
  async load(state: NotifierState, keys: readonly string[]): Promise<number> {
    const entries = await this.entries(keys);
    let merged = 0;
    for (const key of keys) {
      const group = state.groups[key];
      const entry = entries.get(key);
      if (!group || !entry || entry.lastSent <= group.lastSent) continue;
      // Told records are replaced, never edited (the saved state sees each as a change by identity).
      for (const fingerprint of Object.keys(group.told)) if (!Object.hasOwn(entry.told, fingerprint)) delete group.told[fingerprint];
      for (const [fingerprint, told] of Object.entries(entry.told)) group.told[fingerprint] = { ...told };
      group.lastSent = entry.lastSent;
      merged += 1;
    }
    return merged;
  }

  /** These groups' entries as the store has them now (none: missing, unreadable, or another group's). */
  async entries(keys: readonly string[]): Promise<Map<string, NotificationLogEntry | undefined>> {
    const texts = await inBatches(keys, (key) => this.store.get(NFLOG_KEY(key)));
    return new Map(keys.map((key, i) => [key, read(texts[i] ?? null, key)]));
  }

  /** After a step that sent: each group's log as this replica now has it (empty for a group that is gone: everything in it resolved). */
  async save(entries: ReadonlyMap<string, NotificationLogEntry>): Promise<void> {
    const list = [...entries];
    await inBatches(list, async ([key, entry]) =>
      this.store.set(NFLOG_KEY(key), await stringifyPaced({ key, lastSent: entry.lastSent, told: entry.told }), { ttlMs: RETENTION_MS }),
    );
  }
}

function read(text: string | null, key: string): { lastSent: number; told: Record<string, Told> } | undefined {
  if (text === null) return undefined;
  try {
    const checked = ENTRY.safeParse(JSON.parse(text));
    // Another group's entry under this hash (a collision, or a hand-written key) is none of this group's.
    if (!checked.success || checked.data.key !== key) return undefined;
    return { lastSent: checked.data.lastSent, told: dict(Object.entries(checked.data.told)) };
  } catch {
    return undefined;
  }
}

async function inBatches<T, R>(items: readonly T[], each: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CONCURRENCY) out.push(...(await Promise.all(items.slice(i, i + CONCURRENCY).map(each))));
  return out;
}
