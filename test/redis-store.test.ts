import { Redis } from 'ioredis';
import { describe, expect, inject, it } from 'vitest';
import { RedisStore } from '../packages/state/src/redis-store.ts';
import { stateConformance } from '@gpualert/test-support';
import { uniqueName } from './infra/wait-for.ts';

stateConformance('Redis', async (prefix) => new RedisStore({ url: inject('redisUrl'), prefix }));

describe('names on one Redis', () => {
  it('are the prefix and the key, as before Redis Cluster was supported: no hash tag', async () => {
    const prefix = `${uniqueName('names')}:`;
    const store = new RedisStore({ url: inject('redisUrl'), prefix });
    const raw = new Redis(inject('redisUrl'));
    try {
      await store.hashSet('notifier:groups', { g: '1' });
      await store.set('engine:host:gpu-1', 'state');
      expect(await raw.hgetall(`${prefix}notifier:groups`)).toEqual({ g: '1' });
      expect(await raw.get(`${prefix}engine:host:gpu-1`)).toBe('state');
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});
