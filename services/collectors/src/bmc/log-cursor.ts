import type { BmcEventData } from '@gpualert/schema';

/** Entries remembered per BMC: a full SEL holds 512–4,096; a log that wraps past this re-reads none it still holds. */
export const MAX_SEEN_ENTRIES = 4_096;

/**
 * An entry's identity: its log, id and creation time. A BMC reuses ids after its log is cleared,
 * so the id alone would hide the first new entry 1 after a clear.
 */
export function entryKey(entry: BmcEventData): string {
  return `${entry.log}\u0000${entry.entry_id}\u0000${entry.created ?? entry.message}`;
}

/**
 * Which log entries a BMC has already shown, so each becomes a `bmc.event` once. Bounded: the
 * oldest remembered are forgotten first (insertion order). The first poll of a BMC never seen
 * before publishes only entries created within `firstPollWindowMs` of now: a SEL holds years of
 * history nobody wants paged on at start-up.
 */
export class LogCursor {
  private readonly seen: Set<string>;
  private started: boolean;

  constructor(
    saved?: { seen: readonly string[] },
    private readonly max = MAX_SEEN_ENTRIES,
  ) {
    this.seen = new Set(saved?.seen.slice(-max) ?? []);
    this.started = saved !== undefined;
  }

  /** The entries not seen before (and, on a first poll, recent); remembers them all. */
  fresh(entries: readonly BmcEventData[], now: number, firstPollWindowMs: number): BmcEventData[] {
    const out: BmcEventData[] = [];
    const first = !this.started;
    for (const entry of entries) {
      const key = entryKey(entry);
      if (this.seen.has(key)) continue;
      this.remember(key);
      const at = entry.created ? Date.parse(entry.created) : Number.NaN;
      if (first && !(now - at <= firstPollWindowMs)) continue;
      out.push(entry);
    }
    this.started = true;
    return out;
  }

  /** What to save so a restart resumes without publishing the same entries again. */
  snapshot(): { seen: string[] } {
    return { seen: [...this.seen] };
  }

  private remember(key: string): void {
    this.seen.add(key);
    if (this.seen.size > this.max) {
      const oldest = this.seen.values().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }
}
