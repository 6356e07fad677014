import type { Logger } from '@gpualert/log';
import { dict, MAX_SAVED_ENTRY_CHARS, SavedNotification, type Notification } from '@gpualert/notify';
import { decodeVersioned, encodeVersionedPaced, type VersionedState } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';

/** What waits to be sent, one field per notification id. */
export const OUTBOX_KEY = 'notifier:outbox';
/**
 * Who owns each outbox entry (field = the entry's id, value = the owner's instance): the heartbeat
 * reads this small index, not the entries, which a storm makes megabytes each (decoding the outbox
 * every 2 s held the event loop 0.3 s with 20,000 alerts waiting).
 */
export const OUTBOX_OWNERS_KEY = 'notifier:outbox:owners';
/** Set by each running notifier, with a TTL: an outbox entry whose owner's key is gone is taken over by a live notifier. */
export const ALIVE_KEY = (instance: string) => `notifier:alive:${instance}`;
/** Who takes over an orphaned outbox entry: the first to set this. */
const CLAIM_KEY = (id: string) => `notifier:outbox-claim:${id}`;
/** How often a notifier says it is alive and looks for orphaned entries; how long it counts as alive after. */
export const NOTIFIER_HEARTBEAT_MS = 2_000;
/** Shorter than the consumer group's session (10 s): a dead notifier's queued pages are taken over before its partitions, and so before their resolves. */
export const NOTIFIER_ALIVE_TTL_MS = 6_000;
/** At most this many outbox entries are loaded at start, oldest first; the rest stay in the store for the next start. */
export const MAX_OUTBOX_LOADED = 100_000;
/** How many unreadable entries one warning line names (the count is always whole). */
const MAX_NAMED_IN_WARNING = 5;

export interface Outgoing {
  readonly notification: Notification;
  readonly queuedAt: number;
  /** The notifier instance that queued it (absent in entries written before failover): it alone sends it while alive. */
  readonly owner?: string | undefined;
}

/** An outbox entry as saved: version 1 adds the version to what version 0 (before versioned state) wrote. */
export const OUTBOX_ENTRY: VersionedState<Outgoing> = {
  name: 'outbox entry',
  version: 1,
  schema: z.object({ notification: SavedNotification, queuedAt: z.number().finite(), owner: z.string().max(64).optional() }),
  migrate: (raw, from) => (from === 0 ? raw : undefined),
  maxChars: MAX_SAVED_ENTRY_CHARS,
};

/**
 * The outbox: each message to send is written here before the alert's offset is committed and
 * leaves only once the destination took it (or it was dead-lettered), so a restart resends what
 * was in flight. Each entry names its owner; a live notifier takes over a dead one's entries.
 */
export class Outbox {
  constructor(
    private readonly store: StateStore,
    readonly instance: string,
    private readonly log: Logger,
  ) {}

  /** Says this notifier is alive (its entries are its own to send) for NOTIFIER_ALIVE_TTL_MS. */
  async alive(): Promise<void> {
    await this.store.set(ALIVE_KEY(this.instance), '1', { ttlMs: NOTIFIER_ALIVE_TTL_MS });
  }

  /** Stopped: what it leaves is taken over by another notifier at once rather than after the TTL. */
  async gone(): Promise<void> {
    await this.store.delete(ALIVE_KEY(this.instance)).catch(() => 0);
  }

  /** Writes these notifications as this notifier's, encoded in slices that yield to the event loop (a storm's is megabytes of JSON). */
  async put(notifications: readonly Notification[], queuedAt = Date.now()): Promise<void> {
    if (notifications.length === 0) return;
    const entries: [string, string][] = [];
    for (const n of notifications) entries.push([n.id, await encodeVersionedPaced(OUTBOX_ENTRY, { notification: n, queuedAt, owner: this.instance })]);
    // The index first: cut short between the two, an index entry without its entry is cleared by a
    // heartbeat, where an entry without its index would never be seen by one.
    await this.store.hashSet(OUTBOX_OWNERS_KEY, dict(notifications.map((n) => [n.id, this.instance] as const)));
    await this.store.hashSet(OUTBOX_KEY, dict(entries));
  }

  /** Sent or dead-lettered: gone from the outbox. */
  async remove(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.store.hashDelete(OUTBOX_KEY, ...ids);
    await this.store.hashDelete(OUTBOX_OWNERS_KEY, ...ids);
  }

  /**
   * At start: every entry this notifier may send, oldest first (at most MAX_OUTBOX_LOADED), taken
   * over from owners no longer alive. An entry that does not read (damaged, hostile) is dropped
   * with one warning line; one a newer gpualert queued (a rolling upgrade) is left for it.
   */
  async load(): Promise<Outgoing[]> {
    const pendings: Outgoing[] = [];
    const unreadable: { id: string; reason: string; newer: boolean }[] = [];
    const owners = await this.store.hashGetAll(OUTBOX_OWNERS_KEY);
    for (const [id, text] of Object.entries(await this.store.hashGetAll(OUTBOX_KEY))) {
      const entry = decodeVersioned(OUTBOX_ENTRY, text);
      if (!entry.ok || entry.value.notification.id !== id) {
        unreadable.push({ id, reason: entry.ok ? 'its notification has another id' : entry.reason, newer: !entry.ok && entry.newer === true });
        continue;
      }
      const owner = entry.value.owner;
      if (owner !== undefined && (await this.store.get(ALIVE_KEY(owner))) !== null) {
        // Another notifier's, while it runs, is its to send; indexed (an entry an older gpualert wrote is not) so that its heartbeat is seen to stop.
        if (owners[id] !== owner) await this.store.hashSet(OUTBOX_OWNERS_KEY, { [id]: owner });
        continue;
      }
      const adopted = await this.adopt(id, entry.value);
      if (adopted) pendings.push(adopted);
    }
    if (unreadable.length > 0) {
      const dropped = unreadable.filter((u) => !u.newer).map((u) => u.id);
      if (dropped.length > 0) await this.remove(dropped);
      this.log.warn(
        {
          key: OUTBOX_KEY,
          unreadable: unreadable.length,
          examples: unreadable.slice(0, MAX_NAMED_IN_WARNING).map((u) => `${u.id.slice(0, 80)}: ${u.reason}`),
        },
        'state_rebuilt',
      );
    }
    pendings.sort((a, b) => a.queuedAt - b.queuedAt);
    if (pendings.length > MAX_OUTBOX_LOADED) this.log.warn({ key: OUTBOX_KEY, pending: pendings.length, loaded: MAX_OUTBOX_LOADED }, 'outbox_over_bound');
    return pendings.slice(0, MAX_OUTBOX_LOADED);
  }

  /**
   * The heartbeat's look for orphans: the owners index, and only the entries of owners whose key
   * expired, each claimed once (the first live notifier to claim it), re-owned, and returned to send.
   */
  async orphans(): Promise<Outgoing[]> {
    const adopted: Outgoing[] = [];
    const alive = new Map<string, boolean>();
    for (const [id, owner] of Object.entries(await this.store.hashGetAll(OUTBOX_OWNERS_KEY))) {
      if (owner === this.instance) continue;
      if (!alive.has(owner)) alive.set(owner, (await this.store.get(ALIVE_KEY(owner))) !== null);
      if (alive.get(owner)) continue;
      const text = await this.store.hashGet(OUTBOX_KEY, id);
      // Sent since (its owner died between the two deletes): only the index was left.
      if (text === null) {
        await this.store.hashDelete(OUTBOX_OWNERS_KEY, id);
        continue;
      }
      const entry = decodeVersioned(OUTBOX_ENTRY, text);
      if (!entry.ok || entry.value.notification.id !== id) continue; // the next start drops it, with its reason
      const taken = await this.adopt(id, entry.value);
      if (taken) {
        this.log.info({ id, receiver: taken.notification.receiver, from: owner }, 'outbox_adopted');
        adopted.push(taken);
      }
    }
    // In the order they were queued (Redis keeps no order in a big hash): a fault's trigger is sent before its resolve.
    return adopted.sort((a, b) => a.queuedAt - b.queuedAt);
  }

  /** Claims a dead owner's entry (an entry without an owner is this notifier's at start) and writes it as this notifier's; undefined when another claimed it first. */
  private async adopt(id: string, entry: Outgoing): Promise<Outgoing | undefined> {
    if (entry.owner !== undefined && !(await this.store.compareAndSet(CLAIM_KEY(id), null, this.instance, { ttlMs: 10 * NOTIFIER_ALIVE_TTL_MS })))
      return undefined;
    const adopted: Outgoing = { ...entry, owner: this.instance };
    await this.store.hashSet(OUTBOX_KEY, { [id]: await encodeVersionedPaced(OUTBOX_ENTRY, adopted) });
    await this.store.hashSet(OUTBOX_OWNERS_KEY, { [id]: this.instance });
    return adopted;
  }
}
