import type { NotifierState } from '@gpualert/notify';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';

/**
 * What each pager receiver was told per fault, shared by every notifier of a deployment: one
 * hash field per fingerprint (`{receiver: {status, severity, at}}`). The notifier's whole state is
 * saved by each instance for itself; this part is read and written per fingerprint around each
 * step, so the notifier that takes over a dead one's partitions knows what it paged: a fault it
 * paged is not paged again, and its resolve is sent.
 */
export const PAGES_KEY = 'notifier:pages';

type Told = NotifierState['pages'][string];
const TOLD = z.object({
  status: z.enum(['firing', 'resolved']),
  severity: z.enum(['info', 'warning', 'error', 'critical']),
  at: z.number().finite(),
  partition: z.exactOptional(z.number().int().nonnegative()),
  offset: z.exactOptional(z.number().int().nonnegative()),
});
/** The receivers one field may name: a routes file has a handful of pager receivers. */
const MAX_RECEIVERS_PER_FAULT = 64;
const FIELD = z
  .record(z.string().max(256), TOLD)
  .refine((r) => Object.keys(r).length <= MAX_RECEIVERS_PER_FAULT, `at most ${MAX_RECEIVERS_PER_FAULT} receivers`);
/** Fields one HDEL takes. */
const DELETE_BATCH = 1_000;
/** Fingerprints read or written per step, in parallel; the rest wait their turn. */
const CONCURRENCY = 64;

export class SharedPageLog {
  /** The fingerprints this step's loads found a field for: only those can need deleting at `save` (none loaded: any may). */
  private stored: Set<string> | undefined;

  constructor(
    private readonly store: StateStore,
    /** The receivers that page (every receiver of a route with `page: true`). */
    private receivers: readonly string[],
  ) {}

  /** The routes were reloaded: their receivers from now on. */
  setReceivers(receivers: readonly string[]): void {
    this.receivers = receivers;
  }

  /**
   * At start, once: a deployment whose log is still empty (upgraded from a single notifier, or
   * its store wiped) is seeded with what this instance's saved state says it paged.
   */
  async seed(state: NotifierState): Promise<number> {
    if (this.receivers.length === 0 || Object.keys(await this.store.hashGetAll(PAGES_KEY)).length > 0) return 0;
    const fingerprints = new Set(Object.keys(state.pages).map((key) => key.slice(key.indexOf('|') + 1)));
    await this.save(state, [...fingerprints]);
    return fingerprints.size;
  }

  /**
   * Before a step: what the store says of each fingerprint replaces what this instance remembers
   * (another instance may have paged or resolved it since; none there: nothing is paged). A field
   * that does not read keeps this instance's memory.
   */
  async load(state: NotifierState, fingerprints: readonly string[]): Promise<void> {
    if (this.receivers.length === 0) return;
    const unique = [...new Set(fingerprints)];
    const texts = await inBatches(unique, (fp) => this.store.hashGet(PAGES_KEY, fp));
    // A step may load twice (its alerts, then a replica's held pages): what either found is stored.
    this.stored ??= new Set();
    unique.forEach((fp, i) => {
      if (texts[i] !== null && texts[i] !== undefined) this.stored?.add(fp);
    });
    unique.forEach((fp, i) => {
      const text = texts[i];
      let parsed: z.infer<typeof FIELD> | undefined = Object.create(null) as z.infer<typeof FIELD>;
      if (text !== null && text !== undefined) {
        try {
          const checked = FIELD.safeParse(JSON.parse(text));
          parsed = checked.success ? checked.data : undefined;
        } catch {
          parsed = undefined;
        }
      }
      if (!parsed) return;
      for (const receiver of this.receivers) {
        const key = `${receiver}|${fp}`;
        const told = Object.hasOwn(parsed, receiver) ? parsed[receiver] : undefined;
        if (told) state.pages[key] = { ...told };
        else delete state.pages[key];
      }
    });
  }

  /** Whether any pager receiver is now told the fault fires (false once it resolved, or when the log has no word of it). */
  async firing(fingerprint: string): Promise<boolean> {
    const text = await this.store.hashGet(PAGES_KEY, fingerprint);
    if (text === null) return false;
    try {
      const checked = FIELD.safeParse(JSON.parse(text));
      return checked.success && Object.values(checked.data).some((t) => t.status === 'firing');
    } catch {
      return false;
    }
  }

  /**
   * Deletes the fields whose every receiver was told the resolve longer ago than `keptMs`
   * (RESOLVED_PAGE_KEPT_MS): each replica forgets them from its own state too. Reads the whole
   * hash: firing faults and the last hour's resolves. A fault that fired again between the read and
   * the delete loses its record, and a replica behind may page it once more: a duplicate, never a loss.
   */
  async forgetResolved(now: number, keptMs: number): Promise<number> {
    const all = await this.store.hashGetAll(PAGES_KEY);
    const stale: string[] = [];
    for (const fp in all) {
      const checked = FIELD.safeParse(parseJson(all[fp]));
      if (!checked.success) continue;
      const told = Object.values(checked.data);
      if (told.length > 0 && told.every((t) => t.status === 'resolved' && now - t.at > keptMs)) stale.push(fp);
    }
    for (let i = 0; i < stale.length; i += DELETE_BATCH) await this.store.hashDelete(PAGES_KEY, ...stale.slice(i, i + DELETE_BATCH));
    return stale.length;
  }

  /** After a step decided, before its offsets are committed: what it now says of each fingerprint. */
  async save(state: NotifierState, fingerprints: readonly string[]): Promise<void> {
    if (this.receivers.length === 0) return;
    const unique = [...new Set(fingerprints)];
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    const gone: string[] = [];
    for (const fp of unique) {
      const record = Object.create(null) as Record<string, Told>;
      for (const receiver of this.receivers) {
        const told = state.pages[`${receiver}|${fp}`];
        if (told) record[receiver] = told;
      }
      if (Object.keys(record).length > 0) fields[fp] = JSON.stringify(record);
      else if (this.stored === undefined || this.stored.has(fp)) gone.push(fp); // an alert that never paged has no field to delete
    }
    if (Object.keys(fields).length > 0) await this.store.hashSet(PAGES_KEY, fields);
    if (gone.length > 0) await this.store.hashDelete(PAGES_KEY, ...gone);
    this.stored = undefined; // the next step's loads say afresh
  }
}

function parseJson(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function inBatches<T, R>(items: readonly T[], each: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CONCURRENCY) out.push(...(await Promise.all(items.slice(i, i + CONCURRENCY).map(each))));
  return out;
}
