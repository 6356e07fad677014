import { createLogger } from '@gpualert/log';
import type { Notification } from '@gpualert/notify';
import { encodeVersioned } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { ALIVE_KEY, Outbox, OUTBOX_ENTRY, OUTBOX_KEY, OUTBOX_OWNERS_KEY } from './outbox.ts';

const quiet = createLogger({ name: 't', level: 'silent' });
const page = (id: string): Notification => ({ id, receiver: 'pager', group: `page:${id}`, reason: 'page', alerts: [], firing: 1 });

/** A store that counts what is read of the outbox's entries. */
class ReadCounting extends MemoryStore {
  entryReads = 0;
  override async hashGetAll(key: string): Promise<Record<string, string>> {
    const all = await super.hashGetAll(key);
    if (key === OUTBOX_KEY) this.entryReads += Object.keys(all).length;
    return all;
  }
  override async hashGet(key: string, field: string): Promise<string | null> {
    if (key === OUTBOX_KEY) this.entryReads += 1;
    return super.hashGet(key, field);
  }
}

describe('the outbox and its owners', () => {
  it("a live notifier's heartbeat takes over a dead one's entries, reading only those, and leaves a live one's", async () => {
    const store = new ReadCounting();
    const live = new Outbox(store, 'live', quiet);
    const dead = new Outbox(store, 'dead', quiet);
    const other = new Outbox(store, 'other', quiet);
    for (const o of [live, dead, other]) await o.alive();
    await dead.put([page('d1'), page('d2')]);
    await other.put(Array.from({ length: 50 }, (_, i) => page(`o${i}`)));
    expect(await live.orphans()).toEqual([]);
    expect(store.entryReads).toBe(0); // every owner alive: no entry read

    await dead.gone();
    const taken = await live.orphans();
    expect(taken.map((t) => [t.notification.id, t.owner])).toEqual([
      ['d1', 'live'],
      ['d2', 'live'],
    ]);
    expect(store.entryReads).toBe(2);
    expect((await store.hashGetAll(OUTBOX_OWNERS_KEY)).d1).toBe('live');
    // Taken once: a second heartbeat, or a second live notifier, finds nothing of them.
    expect(await live.orphans()).toEqual([]);
    expect(await other.orphans()).toEqual([]);
  });

  it('an entry sent after its owner died leaves only its index, which the heartbeat clears', async () => {
    const store = new MemoryStore();
    const dead = new Outbox(store, 'dead', quiet);
    await dead.put([page('d1')]);
    await store.hashDelete(OUTBOX_KEY, 'd1');
    expect(await new Outbox(store, 'live', quiet).orphans()).toEqual([]);
    expect(await store.hashGetAll(OUTBOX_OWNERS_KEY)).toEqual({});
  });

  it('entries an older gpualert wrote (no owners index) are indexed at start, so its death is seen by the heartbeat', async () => {
    const store = new MemoryStore();
    await store.set(ALIVE_KEY('old'), '1');
    await store.hashSet(OUTBOX_KEY, {
      o1: encodeVersioned(OUTBOX_ENTRY, { notification: page('o1'), queuedAt: 1, owner: 'old' }),
      n1: encodeVersioned(OUTBOX_ENTRY, { notification: page('n1'), queuedAt: 2 }),
    });
    const started = new Outbox(store, 'new', quiet);
    // Without an owner: this notifier's to send; the old one's, while it lives, is left.
    expect((await started.load()).map((e) => [e.notification.id, e.owner])).toEqual([['n1', 'new']]);
    expect(await store.hashGetAll(OUTBOX_OWNERS_KEY)).toEqual({ o1: 'old', n1: 'new' });
    await store.delete(ALIVE_KEY('old'));
    expect((await started.orphans()).map((e) => e.notification.id)).toEqual(['o1']);
  });

  it('removing an entry removes its index', async () => {
    const store = new MemoryStore();
    const outbox = new Outbox(store, 'me', quiet);
    await outbox.put([page('a'), page('b')]);
    await outbox.remove(['a']);
    expect(Object.keys(await store.hashGetAll(OUTBOX_KEY))).toEqual(['b']);
    expect(await store.hashGetAll(OUTBOX_OWNERS_KEY)).toEqual({ b: 'me' });
  });
});
