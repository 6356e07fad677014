import { createLogger } from '@gpualert/log';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { ALIVE_KEY } from '../outbox.ts';
import { ClusterMembership, MEMBERS_KEY } from './membership.ts';

const log = createLogger({ name: 'test', level: 'silent' });

async function heldBy(store: MemoryStore, replica: string, instance: string): Promise<void> {
  await store.hashSet(MEMBERS_KEY, { [replica]: JSON.stringify({ instance, seen: Date.now() }) });
  await store.set(ALIVE_KEY(instance), '1');
}

describe('a replica name', () => {
  it('is taken back after a crash once the old run is no longer alive (the wait is the old key running out)', async () => {
    const store = new MemoryStore();
    await heldBy(store, 'notifier-0', 'crashed-run');
    const me = new ClusterMembership(store, 'notifier-0', 'new-run', 15_000, log);
    let waited = 0;
    await me.claim(async () => {
      waited += 1;
      if (waited === 3) await store.delete(ALIVE_KEY('crashed-run')); // its TTL ran out
    });
    expect(waited).toBe(3);
    await me.beat(Date.now());
    expect(JSON.parse((await store.hashGet(MEMBERS_KEY, 'notifier-0')) ?? '{}')).toMatchObject({ instance: 'new-run' });
  });

  it('held by another running notifier is refused, naming it and how to fix it', async () => {
    const store = new MemoryStore();
    await heldBy(store, 'notifier-0', 'other-run');
    const me = new ClusterMembership(store, 'notifier-0', 'new-run', 15_000, log);
    let now = Date.now();
    const realNow = Date.now;
    Date.now = () => now;
    try {
      await expect(me.claim(() => Promise.resolve(void (now += 1_000)))).rejects.toThrow(
        /"notifier-0" is held by another running notifier.*GPUALERT_NOTIFIER_REPLICA/,
      );
    } finally {
      Date.now = realNow;
    }
  });

  it('puts the replicas in order by name, the live ones only', async () => {
    const store = new MemoryStore();
    await heldBy(store, 'notifier-0', 'a');
    await heldBy(store, 'notifier-2', 'c');
    await store.hashSet(MEMBERS_KEY, { 'notifier-3': JSON.stringify({ instance: 'gone', seen: Date.now() }) });
    const me = new ClusterMembership(store, 'notifier-1', 'b', 15_000, log);
    await me.beat(Date.now());
    expect(me.peers().map((p) => p.name)).toEqual(['notifier-0', 'notifier-1', 'notifier-2']);
    expect([me.position(), me.waitMs()]).toEqual([1, 15_000]);
  });
});
