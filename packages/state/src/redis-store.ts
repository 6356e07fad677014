import { Redis, type RedisOptions, type Result } from 'ioredis';
import type { ScoredMember, StateStore, TtlOption } from './state-store.ts';

const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current then return 0 end
elseif current ~= ARGV[2] then
  return 0
end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
elseif tonumber(ARGV[5]) > 0 then
  redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
else
  redis.call('SET', KEYS[1], ARGV[4])
end
return 1`;

const INCREMENT = `
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return value`;

/** Fields asked for per HSCAN round trip when a hash is read within a bound. */
const HSCAN_PAGE = 1_000;

/**
 * Where Redis is: `redis://` or `rediss://` for one server, or `redis+sentinel://` for a Sentinel
 * deployment, `redis+sentinel://[:password@]host:26379[,host:26379…]/master-name[/db]`: ioredis
 * asks the Sentinels which server is the master, and asks again when it fails over. The password
 * is the master's (and its replicas'); the Sentinels are reached without one.
 */
/** How long a command waits through Sentinels for a master before it fails (a failover takes seconds). */
export const SENTINEL_COMMAND_TIMEOUT_MS = 15_000;

export function redisConnection(url: string): { url: string } | { options: RedisOptions } {
  if (!url.startsWith('redis+sentinel://')) return { url };
  const rest = url.slice('redis+sentinel://'.length);
  const at = rest.lastIndexOf('@', rest.indexOf('/') === -1 ? rest.length : rest.indexOf('/'));
  const auth = at === -1 ? '' : rest.slice(0, at);
  const [hosts = '', name = '', db = ''] = rest.slice(at + 1).split('/');
  const sentinels = hosts
    .split(',')
    .filter((h) => h !== '')
    .map((h) => {
      const parts = h.split(':');
      const port = parts[1] ?? '26379';
      return { host: parts.length > 2 ? '' : (parts[0] ?? ''), port: /^\d{1,5}$/.test(port) ? Number(port) : Number.NaN };
    });
  if (sentinels.length === 0 || sentinels.some((s) => s.host === '' || !Number.isInteger(s.port) || s.port < 1 || s.port > 65_535)) {
    throw new Error('REDIS_URL: expected redis+sentinel://host:port[,host:port…]/master-name');
  }
  if (!/^[\w.-]+$/.test(decodeURIComponent(name))) throw new Error('REDIS_URL: a redis+sentinel:// URL names its master after the hosts (…/mymaster)');
  const password = auth.includes(':') ? decodeURIComponent(auth.slice(auth.indexOf(':') + 1)) : '';
  const username = auth.includes(':') ? decodeURIComponent(auth.slice(0, auth.indexOf(':'))) : decodeURIComponent(auth);
  return {
    options: {
      // Through Sentinels a command waits for a master without end: bounded, so an unreachable
      // deployment (or a master name nobody knows) is an error a step retries, not a silent hang.
      commandTimeout: SENTINEL_COMMAND_TIMEOUT_MS,
      sentinels,
      name: decodeURIComponent(name),
      ...(password ? { password } : {}),
      ...(username ? { username } : {}),
      ...(/^\d+$/.test(db) ? { db: Number(db) } : {}),
    },
  };
}

export interface RedisStoreOptions {
  readonly url: string;
  /** Scopes every key to one deployment, e.g. `gpualert:prod:`. */
  readonly prefix?: string;
  readonly connectTimeoutMs?: number;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    gpualertCompareAndSet(key: string, ...args: string[]): Result<number, Context>;
    gpualertIncrement(key: string, by: string, ttl: string): Result<number, Context>;
  }
}

/** The state store over Redis through ioredis; atomic operations are Lua scripts. */
export class RedisStore implements StateStore {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;

  constructor(options: RedisStoreOptions) {
    const redisOptions: RedisOptions = {
      keyPrefix: options.prefix ?? '',
      connectTimeout: options.connectTimeoutMs ?? 5_000,
      maxRetriesPerRequest: 3,
      enableOfflineQueue: true,
    };
    const where = redisConnection(options.url);
    this.redis = 'url' in where ? new Redis(where.url, redisOptions) : new Redis({ ...where.options, ...redisOptions });
    // Connection errors surface on the commands that hit them; the client keeps reconnecting.
    this.redis.on('error', () => {});
    this.redis.defineCommand('gpualertCompareAndSet', { numberOfKeys: 1, lua: COMPARE_AND_SET });
    this.redis.defineCommand('gpualertIncrement', { numberOfKeys: 1, lua: INCREMENT });
  }

  async get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async set(key: string, value: string, options: TtlOption = {}): Promise<void> {
    if (options.ttlMs !== undefined) await this.redis.set(key, value, 'PX', Math.max(1, Math.round(options.ttlMs)));
    else await this.redis.set(key, value);
  }

  async delete(...keys: string[]): Promise<number> {
    return keys.length === 0 ? 0 : this.redis.del(...keys);
  }

  async compareAndSet(key: string, expected: string | null, next: string | null, options: TtlOption = {}): Promise<boolean> {
    const result = await this.redis.gpualertCompareAndSet(
      key,
      expected === null ? '1' : '0',
      expected ?? '',
      next === null ? '1' : '0',
      next ?? '',
      String(Math.round(options.ttlMs ?? 0)),
    );
    return result === 1;
  }

  async increment(key: string, by = 1, options: TtlOption = {}): Promise<number> {
    return this.redis.gpualertIncrement(key, String(by), String(Math.round(options.ttlMs ?? 0)));
  }

  async expire(key: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.pexpire(key, Math.max(1, Math.round(ttlMs)))) === 1;
  }

  async hashGet(key: string, field: string): Promise<string | null> {
    return this.redis.hget(key, field);
  }

  async hashSet(key: string, fields: Readonly<Record<string, string>>): Promise<void> {
    if (Object.keys(fields).length > 0) await this.redis.hset(key, fields);
  }

  async hashGetAll(key: string): Promise<Record<string, string>> {
    return this.redis.hgetall(key);
  }

  async hashGetSome(key: string, limit: number): Promise<{ fields: Record<string, string>; total: number }> {
    const total = await this.redis.hlen(key);
    const fields: Record<string, string> = Object.create(null);
    if (total <= limit) {
      Object.assign(fields, await this.redis.hgetall(key));
      return { fields, total };
    }
    // Over the bound: scanned a page at a time until enough are read (HSCAN may repeat a field; a Record keeps it once).
    let cursor = '0';
    let taken = 0;
    do {
      const [next, flat] = await this.redis.hscan(key, cursor, 'COUNT', Math.min(HSCAN_PAGE, limit));
      cursor = next;
      for (const [field, value] of twoByTwo(flat)) {
        if (taken >= limit) break;
        if (!Object.hasOwn(fields, field)) taken += 1;
        fields[field] = value;
      }
    } while (cursor !== '0' && taken < limit);
    return { fields, total };
  }

  async hashDelete(key: string, ...fields: string[]): Promise<number> {
    return fields.length === 0 ? 0 : this.redis.hdel(key, ...fields);
  }

  async sortedAdd(key: string, entries: readonly ScoredMember[]): Promise<void> {
    if (entries.length === 0) return;
    await this.redis.zadd(key, ...entries.flatMap((e) => [String(e.score), e.member]));
  }

  async sortedRange(key: string, min: number, max: number): Promise<ScoredMember[]> {
    const flat = await this.redis.zrangebyscore(key, bound(min), bound(max), 'WITHSCORES');
    const out: ScoredMember[] = [];
    for (const [member, score] of twoByTwo(flat)) out.push({ member, score: Number(score) });
    return out;
  }

  async sortedRemove(key: string, ...members: string[]): Promise<number> {
    return members.length === 0 ? 0 : this.redis.zrem(key, ...members);
  }

  async sortedRemoveRange(key: string, min: number, max: number): Promise<number> {
    return this.redis.zremrangebyscore(key, bound(min), bound(max));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

function bound(value: number): string {
  if (value === Infinity) return '+inf';
  if (value === -Infinity) return '-inf';
  return String(value);
}

/** A flat Redis reply (`field, value, field, value…`), two at a time; an odd last one is left out. */
function* twoByTwo(flat: readonly string[]): Generator<[string, string]> {
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const first = flat[i];
    const second = flat[i + 1];
    if (first !== undefined && second !== undefined) yield [first, second];
  }
}
