import { describe, expect, it } from 'vitest';
import { MemoryStore, MemoryStoreData } from './memory-store.ts';
import { stateConformance } from '@gpualert/test-support';

// Stores over one MemoryStoreData are clients of one embedded server, like two Redis connections.
const server = new MemoryStoreData();
stateConformance('in-process (embedded mode)', async (prefix) => new MemoryStore({ prefix, data: server }));

describe('MemoryStore with its own clock', () => {
  it('expires by the clock it is given', async () => {
    let now = 1_000;
    const store = new MemoryStore({ now: () => now });
    await store.set('k', 'v', { ttlMs: 500 });
    now += 499;
    expect(await store.get('k')).toBe('v');
    now += 1;
    expect(await store.get('k')).toBeNull();
  });

  it('refuses to read a key as the wrong kind, as Redis does', async () => {
    const store = new MemoryStore();
    await store.hashSet('h', { a: '1' });
    await expect(store.get('h')).rejects.toThrow(/WRONGTYPE/);
  });
});
