import { inject } from 'vitest';
import { RedisStore } from '../packages/state/src/redis-store.ts';
import { stateConformance } from '../packages/state/src/state-conformance.ts';

stateConformance('Redis', async (prefix) => new RedisStore({ url: inject('redisUrl'), prefix }));
