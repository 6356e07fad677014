export type { StateStore } from './state-store.ts';
export { MemoryStore, MemoryStoreData } from './memory-store.ts';
export { redisConnection, RedisStore } from './redis-store.ts';
export { clusterKey, SLOT_GROUPS } from './slot-groups.ts';
