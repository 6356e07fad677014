import { hashedKey } from './cluster/shared-notification-log.ts';
import { RESOLVED_PAGE_KEPT_MS, type NotifierState } from '@gpualert/notify';
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
/**
 * A fault every pager receiver was told the resolve of: a key of its own that Redis expires after
 * RESOLVED_PAGE_KEPT_MS (no sweep, so nothing can delete a record written since), read when the
 * hash has no field for the fault. A replica reading a backlog learns from it that the fault's old
 * firing is old news. The fingerprint is hashed: any string an alert carries makes a key of 32 hex.
 */
export function resolvedPageKey(fingerprint: string): string {
  return hashedKey('notifier:page-resolved:', fingerprint);
}

/**
 * A page's resolve the pager took (answered 2xx), per receiver and fault, for the hour: when it
 * was queued. A trigger queued before it that the pager takes after it, the fault not firing,
 * reopened what was over (replicas send from queues of their own, so a page taken over from a
 * dead one can arrive behind the resolve another sent). A resolve queued before the trigger (an
 * earlier episode's, late) says nothing of it. The key is 32 hex of the SHA-256 of receiver and
 * fingerprint.
 */
export function resolveTakenKey(receiver: string, fingerprint: string): string {
  return hashedKey('notifier:page-resolve-taken:', `${receiver}|${fingerprint}`);
}

type Told = NotifierState['pages'][string];
const TOLD = z.object({
  status: z.enum(['firing', 'resolved']),
  severity: z.enum(['info', 'warning', 'error', 'critical']),
  at: z.number().finite(),
  partition: z.exactOptional(z.number().int().nonnegative()),
  offset: z.exactOptional(z.number().int().nonnegative()),
  episode: z.exactOptional(z.string().max(64)),
});
/** The receivers one field may name: a routes file has a handful of pager receivers. */
const MAX_RECEIVERS_PER_FAULT = 64;
const FIELD = z
  .record(z.string().max(256), TOLD)
  .refine((r) => Object.keys(r).length <= MAX_RECEIVERS_PER_FAULT, `at most ${MAX_RECEIVERS_PER_FAULT} receivers`);
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
    const fields = await inBatches(unique, (fp) => this.store.hashGet(PAGES_KEY, fp));
    // A step may load twice (its alerts, then a replica's held pages): what either found is stored.
    this.stored ??= new Set();
    unique.forEach((fp, i) => {
      if (fields[i] !== null && fields[i] !== undefined) this.stored?.add(fp);
    });
    // No field: the fault is not paged now; its resolve, if it was told within the hour, is in a key of its own.
    const texts = await inBatches(unique, async (fp, i) => fields[i] ?? (await this.store.get(resolvedPageKey(fp))));
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

  /** The pager took the resolves of these faults, queued at `queuedAt` (ms since the epoch, the queuing notifier's clock). */
  async resolvesTaken(receiver: string, fingerprints: readonly string[], queuedAt: number): Promise<void> {
    await inBatches(fingerprints, async (fp) => {
      const key = resolveTakenKey(receiver, fp);
      // The latest queued resolve stands: a late one of an earlier episode does not move it back.
      if (Number(await this.store.get(key)) < queuedAt) await this.store.set(key, String(queuedAt), { ttlMs: RESOLVED_PAGE_KEPT_MS });
    });
  }

  /** Whether a trigger queued at `queuedAt` that the pager just took reached it after the fault's resolve (one queued since, taken, the fault not firing now). */
  async reopened(receiver: string, fingerprint: string, queuedAt: number): Promise<boolean> {
    if (await this.firing(fingerprint)) return false;
    const taken = await this.store.get(resolveTakenKey(receiver, fingerprint));
    return taken !== null && Number(taken) >= queuedAt;
  }

  /** After a step decided, before its offsets are committed: what it now says of each fingerprint. */
  async save(state: NotifierState, fingerprints: readonly string[]): Promise<void> {
    if (this.receivers.length === 0) return;
    const unique = [...new Set(fingerprints)];
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    const gone: string[] = [];
    const resolved: [string, string][] = [];
    for (const fp of unique) {
      const record = Object.create(null) as Record<string, Told>;
      for (const receiver of this.receivers) {
        const told = state.pages[`${receiver}|${fp}`];
        if (told) record[receiver] = told;
      }
      const told = Object.values(record);
      if (told.some((t) => t.status === 'firing')) fields[fp] = JSON.stringify(record);
      else {
        // Resolved for every receiver (or never paged): no field in the hash; a resolve kept in its own key for the hour.
        if (told.length > 0) resolved.push([fp, JSON.stringify(record)]);
        if (this.stored === undefined || this.stored.has(fp)) gone.push(fp); // an alert that never paged has no field to delete
      }
    }
    if (Object.keys(fields).length > 0) await this.store.hashSet(PAGES_KEY, fields);
    await inBatches(resolved, ([fp, text]) => this.store.set(resolvedPageKey(fp), text, { ttlMs: RESOLVED_PAGE_KEPT_MS }));
    if (gone.length > 0) await this.store.hashDelete(PAGES_KEY, ...gone);
    this.stored = undefined; // the next step's loads say afresh
  }
}

async function inBatches<T, R>(items: readonly T[], each: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CONCURRENCY) out.push(...(await Promise.all(items.slice(i, i + CONCURRENCY).map((item, k) => each(item, i + k)))));
  return out;
}
