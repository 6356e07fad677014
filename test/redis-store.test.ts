import { inject } from 'vitest';
import { RedisStore } from '../packages/state/src/redis-store.ts';
import { stateConformance } from '@gpualert/test-support';

stateConformance('Redis', async (prefix) => new RedisStore({ url: inject('redisUrl'), prefix }));
