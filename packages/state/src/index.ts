export * from './state-store.ts';
export { MemoryStore, MemoryStoreData, type MemoryStoreOptions } from './memory-store.ts';
export { redisConnection, RedisStore, type RedisStoreOptions } from './redis-store.ts';
