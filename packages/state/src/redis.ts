// The Redis-backed store, an entry of its own (`@gpualert/state/redis`): importing the package's
// main entry does not load ioredis.
export { redisConnection, RedisStore } from './redis-store.ts';
