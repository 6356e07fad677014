// RedisStore and redisConnection are `@gpualert/state/redis` (src/redis.ts): ioredis loads only in a process that uses Redis (an agent or `up` without REDIS_URL does not).
export type { StateStore } from './state-store.ts';
export { MemoryStore, MemoryStoreData } from './memory-store.ts';
export { clusterKey, SLOT_GROUPS } from './slot-groups.ts';
