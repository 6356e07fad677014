import type { StateStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from './wait-for.ts';

/** Far longer than a store's round trip, short enough to wait out. */
const TTL_MS = 1_000;

/** Opens a store on a prefix; two calls with one prefix are two clients of one store. */
export type StoreFactory = (prefix: string) => Promise<StateStore>;

/** One suite every StateStore adapter passes. */
export function stateConformance(name: string, open: StoreFactory): void {
  describe(`StateStore conformance: ${name}`, () => {
    const stores: StateStore[] = [];
    let prefix = '';
    async function store(p = prefix): Promise<StateStore> {
      const s = await open(p);
      stores.push(s);
      return s;
    }
    afterEach(async () => {
      for (const s of stores.splice(0)) {
        await s.close();
      }
    });
    const fresh = () => (prefix = `gpualert-test:${process.pid}:${Math.random().toString(36).slice(2)}:`);

    it('sets, gets and deletes strings, scoped by the deployment prefix', async () => {
      fresh();
      const a = await store();
      const other = await store(`${prefix}other:`);
      await a.set('k', 'v1');
      expect(await a.get('k')).toBe('v1');
      expect(await other.get('k')).toBeNull();
      expect(await a.delete('k', 'missing')).toBe(1);
      expect(await a.get('k')).toBeNull();
    });

    it('expires keys and counters after their TTL', async () => {
      fresh();
      const s = await store();
      await s.set('long', 'y', { ttlMs: 600_000 });
      // Read back while alive, each try on fresh keys: a try a stalled machine spent past the TTL
      // is not the store's fault, and the next one takes over.
      let tries = 0;
      let [short, counter] = ['', ''];
      let seen: unknown[] = [];
      await waitFor(
        async () => {
          tries += 1;
          [short, counter] = [`short-${tries}`, `counter-${tries}`];
          await s.set(short, 'x', { ttlMs: TTL_MS });
          const sums = [await s.increment(counter, 2, { ttlMs: TTL_MS }), await s.increment(counter, 3, { ttlMs: TTL_MS })];
          seen = [await s.get(short), ...sums];
          return seen.join() === 'x,2,5';
        },
        'a key and a counter read back while alive',
        30_000,
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}: got [${seen.join(', ')}], not [x, 2, 5]`);
      });
      await waitFor(async () => (await s.get(short)) === null && (await s.get(counter)) === null, 'expiry', TTL_MS + 30_000);
      expect(await s.get('long')).toBe('y');
      expect(await s.increment(counter)).toBe(1);
    }, 120_000);

    it('compare-and-set loses no update under concurrency', async () => {
      fresh();
      const clients = [await store(), await store(), await store()];
      await clients[0]!.set('n', '0');
      const worker = async (s: StateStore) => {
        for (let done = 0; done < 15;) {
          const current = await s.get('n');
          if (await s.compareAndSet('n', current, String(Number(current) + 1))) done += 1;
        }
      };
      await Promise.all(clients.flatMap((c) => [worker(c), worker(c)]));
      expect(await clients[0]!.get('n')).toBe('90');
    });

    it('compare-and-set from absent lets exactly one claimant win, and can delete', async () => {
      fresh();
      const clients = [await store(), await store()];
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => clients[i % 2]!.compareAndSet('owner', null, `worker-${i}`, { ttlMs: 600_000 })));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = await clients[0]!.get('owner');
      expect(await clients[1]!.compareAndSet('owner', 'someone-else', null)).toBe(false);
      expect(await clients[1]!.compareAndSet('owner', winner, null)).toBe(true);
      expect(await clients[0]!.get('owner')).toBeNull();
    });

    it('keeps hashes', async () => {
      fresh();
      const s = await store();
      await s.hashSet('h', { a: '1', b: '2' });
      await s.hashSet('h', { b: '3' });
      expect(await s.hashGet('h', 'b')).toBe('3');
      expect(await s.hashGetAll('h')).toEqual({ a: '1', b: '3' });
      expect(await s.hashDelete('h', 'a', 'zz')).toBe(1);
      expect(await s.hashGetAll('h')).toEqual({ b: '3' });
      expect(await s.hashGetAll('none')).toEqual({});
    });

    it('reads a hash within a bound: at most that many of its fields, and how many it holds', async () => {
      fresh();
      const s = await store();
      const all = Object.fromEntries(Array.from({ length: 2_500 }, (_, i) => [`host-${i}`, `v${i}`]));
      await s.hashSet('big', all);
      const some = await s.hashGetSome('big', 1_200);
      expect(some.total).toBe(2_500);
      expect(Object.keys(some.fields)).toHaveLength(1_200);
      for (const [field, value] of Object.entries(some.fields)) expect(all[field]).toBe(value);
      const whole = await s.hashGetSome('big', 2_500);
      expect({ ...whole.fields }).toEqual(all);
      expect(await s.hashGetSome('none', 10)).toEqual({ fields: {}, total: 0 });
    });

    it('keeps sorted sets ordered by score', async () => {
      fresh();
      const s = await store();
      await s.sortedAdd('z', [
        { member: 'c', score: 30 },
        { member: 'a', score: 10 },
        { member: 'b', score: 20 },
      ]);
      await s.sortedAdd('z', [{ member: 'a', score: 25 }]);
      expect(await s.sortedRange('z', -Infinity, Infinity)).toEqual([
        { member: 'b', score: 20 },
        { member: 'a', score: 25 },
        { member: 'c', score: 30 },
      ]);
      expect((await s.sortedRange('z', 21, 30)).map((e) => e.member)).toEqual(['a', 'c']);
      expect(await s.sortedRemoveRange('z', 0, 22)).toBe(1);
      expect(await s.sortedRemove('z', 'c', 'q')).toBe(1);
      expect(await s.sortedRange('z', -Infinity, Infinity)).toEqual([{ member: 'a', score: 25 }]);
    });
  });
}
