import { redisConnection, RedisStore } from '@gpualert/state/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stateConformance } from '@gpualert/test-support';
import { SentinelGroup } from './infra/redis-sentinel.ts';
import { waitFor } from './infra/wait-for.ts';

/**
 * The state store on Redis Sentinel (a master, a replica, three Sentinels from this machine's
 * redis-server): the same conformance suite as a single Redis, and a failover under it.
 */
let group: SentinelGroup;
beforeAll(async () => {
  group = await SentinelGroup.start();
}, 90_000);
afterAll(async () => {
  await group?.stop();
});

stateConformance('Redis Sentinel (redis+sentinel://)', async (prefix) => new RedisStore({ url: group.url, prefix }));

describe('the state store when Sentinel fails over', () => {
  it('the master killed: the store finds the promoted replica by itself, and what was written before is still there', async () => {
    const store = new RedisStore({ url: group.url, prefix: 'failover:' });
    try {
      await store.set('before', 'kept');
      await store.hashSet('h', { a: '1' });
      const was = await group.masterPort();
      expect(was).toBe(group.master.port);
      // Replicated before the kill (asynchronous replication: what a master had not yet sent is lost with it).
      await new Promise((r) => setTimeout(r, 500));
      await group.master.stop();
      await waitFor(async () => (await group.masterPort()) === group.replica.port, 'the replica promoted', 60_000);
      await waitFor(
        async () =>
          await store.set('after', 'written').then(
            () => true,
            () => false,
          ),
        'a write after the failover',
        30_000,
      );
      expect(await store.get('before')).toBe('kept');
      expect(await store.get('after')).toBe('written');
      expect(await store.hashGetAll('h')).toEqual({ a: '1' });
    } finally {
      await store.close();
    }
  }, 120_000);
});

describe('a redis+sentinel:// URL', () => {
  it('names the Sentinels, the master, its password and database; a plain URL passes through; a broken one is one line without the password', () => {
    expect(redisConnection('redis+sentinel://:s3cret@10.0.0.1:26379,10.0.0.2,sentinel-3:26380/gpualert/2')).toEqual({
      options: {
        commandTimeout: 15_000,
        sentinels: [
          { host: '10.0.0.1', port: 26379 },
          { host: '10.0.0.2', port: 26379 },
          { host: 'sentinel-3', port: 26380 },
        ],
        name: 'gpualert',
        password: 's3cret',
        db: 2,
      },
    });
    expect(redisConnection('redis://127.0.0.1:6379')).toEqual({ url: 'redis://127.0.0.1:6379' });
    for (const bad of [
      'redis+sentinel://:s3cret@/gpualert',
      'redis+sentinel://:s3cret@host:99999/gpualert',
      'redis+sentinel://:s3cret@host:26379',
      'redis+sentinel://:s3cret@host:0x50/gpualert',
      'redis+sentinel://:s3cret@host:1:2/gpualert',
    ]) {
      expect(() => redisConnection(bad), bad).toThrow(/^REDIS_URL: /);
      try {
        redisConnection(bad);
      } catch (error) {
        expect((error as Error).message).not.toContain('s3cret');
      }
    }
  });
});

describe('Sentinels nobody answers', () => {
  it('a command fails within its bound rather than waiting for a master without end', async () => {
    const store = new RedisStore({ url: 'redis+sentinel://127.0.0.1:9/gpualert', prefix: 'x:' });
    try {
      const started = Date.now();
      await expect(store.get('k')).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      await store.close();
    }
  }, 90_000);
});
