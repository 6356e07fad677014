import { parseClusterUrl } from '@gpualert/config';
import { GpualertError } from '@gpualert/schema';
import { Cluster, Redis, type ClusterOptions, type RedisOptions, type Result } from 'ioredis';
import { clusterKey, slotGroupOf, SLOT_GROUPS } from './slot-groups.ts';
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

/** How long a command waits through Sentinels for a master before it fails (a failover takes seconds). */
export const SENTINEL_COMMAND_TIMEOUT_MS = 15_000;

/** How long a command waits for Redis Cluster (its layout found, a failed master's replica promoted) before it fails. */
export const CLUSTER_COMMAND_TIMEOUT_MS = 15_000;

/** Seed nodes and the options of ioredis's Cluster client, as a `redis+cluster://` URL gives them. */
export interface ClusterConnection {
  readonly seeds: readonly { readonly host: string; readonly port: number }[];
  readonly options: ClusterOptions;
}

/**
 * Where Redis is: `redis://` or `rediss://` for one server; `redis+sentinel://` for a Sentinel
 * deployment, `redis+sentinel://[:password@]host:26379[,host:26379…]/master-name[/db]`: ioredis
 * asks the Sentinels which server is the master, and asks again when it fails over. The password
 * is the master's (and its replicas'); the Sentinels are reached without one. `redis+cluster://`
 * for Redis Cluster, `redis+cluster://[[user]:password@]host:port[,host:port…]` (at most 16 seed
 * nodes): ioredis's Cluster finds every node and slot from them and follows failovers and
 * resharding. A malformed URL throws one line naming REDIS_URL, never its text.
 */
export function redisConnection(url: string): { url: string } | { options: RedisOptions } | { cluster: ClusterConnection } {
  if (url.startsWith('redis+cluster://')) return { cluster: clusterConnection(url) };
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

function clusterConnection(url: string): ClusterConnection {
  const parsed = parseClusterUrl(url);
  if (!parsed.ok) throw new Error(`REDIS_URL: ${parsed.problem}`);
  const { seeds, username, password } = parsed.value;
  return {
    seeds,
    options: {
      // Commands wait (queued) while the client learns the layout or a failover settles, within the store's bound.
      enableOfflineQueue: true,
      redisOptions: {
        commandTimeout: CLUSTER_COMMAND_TIMEOUT_MS,
        ...(password ? { password } : {}),
        ...(username ? { username } : {}),
      },
    },
  };
}

export interface RedisStoreOptions {
  readonly url: string;
  /** Scopes every key to one deployment, e.g. `gpualert:prod:`. */
  readonly prefix?: string;
  readonly connectTimeoutMs?: number;
  /** How long one command may wait for its answer before Redis counts as away (default `CLUSTER_COMMAND_TIMEOUT_MS`). */
  readonly commandTimeoutMs?: number;
  /** On Redis Cluster, the keys that share a hash tag (SLOT_GROUPS); tests give none to see CROSSSLOT. */
  readonly slotGroups?: ReadonlyMap<string, string>;
}

/** Redis's own "not now" replies (loading, a failover): away for a while, like a refused connection. */
const NOT_NOW = /^(?:LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY)\b/;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    gpualertCompareAndSet(key: string, ...args: string[]): Result<number, Context>;
    gpualertIncrement(key: string, by: string, ttl: string): Result<number, Context>;
  }
}

/**
 * The state store over Redis through ioredis: one server, Sentinel or Cluster; atomic operations
 * are Lua scripts on one key. Keys are the prefix and the key on one server or Sentinel; on a
 * cluster, a key of a slot group (slot-groups.ts) has the group's hash tag in front.
 */
export class RedisStore implements StateStore {
  readonly kind = 'redis' as const;
  private readonly redis: Redis | Cluster;
  /** The Redis name of a key; on a cluster, with its hash tag. */
  private readonly name: (key: string) => string;
  /** On a cluster, the keys one DEL may take together: those of one slot group. */
  private readonly together: (key: string) => string;
  private readonly inCluster: boolean;
  private readonly commandTimeoutMs: number;

  constructor(options: RedisStoreOptions) {
    const prefix = options.prefix ?? '';
    this.commandTimeoutMs = options.commandTimeoutMs ?? CLUSTER_COMMAND_TIMEOUT_MS;
    const redisOptions = {
      connectTimeout: options.connectTimeoutMs ?? 5_000,
      maxRetriesPerRequest: 3,
    } satisfies RedisOptions;
    const where = redisConnection(options.url);
    if ('cluster' in where) {
      const groups = options.slotGroups ?? SLOT_GROUPS;
      this.inCluster = true;
      this.name = (key) => clusterKey(prefix, key, groups);
      this.together = (key) => slotGroupOf(key, groups) ?? `key:${key}`;
      this.redis = new Cluster([...where.cluster.seeds], {
        ...where.cluster.options,
        redisOptions: { ...where.cluster.options.redisOptions, ...redisOptions },
      });
    } else {
      this.inCluster = false;
      this.name = (key) => `${prefix}${key}`;
      this.together = () => '';
      // Auto-pipelining: the commands of one turn of the event loop (an engine batch's host states, a
      // notifier step's keys) go to the server as one write instead of a write each (the engine's saves
      // spent 7-9 % of its time in socket writes; 3 % with it). Not on a cluster: there, with no node
      // answering, a pipelined command fails at once instead of within its bound.
      const single = { ...redisOptions, enableOfflineQueue: true, enableAutoPipelining: true };
      this.redis = 'url' in where ? new Redis(where.url, single) : new Redis({ ...where.options, ...single });
    }
    // Connection errors surface on the commands that hit them; the client keeps reconnecting.
    this.redis.on('error', () => {});
    this.redis.defineCommand('gpualertCompareAndSet', { numberOfKeys: 1, lua: COMPARE_AND_SET });
    this.redis.defineCommand('gpualertIncrement', { numberOfKeys: 1, lua: INCREMENT });
  }

  /**
   * A command, bounded: ioredis's Cluster queues a command without end while no node answers (its
   * timeout starts only once a node has it), and a server that accepts the connection and then
   * hangs holds one forever. Redis away (refused, reset, retries spent) or too slow is one retriable
   * GA-INFRA-UNAVAILABLE, so a one-shot command ends with exit 75 and one line, a service retries;
   * an error Redis answered (a ReplyError: WRONGTYPE, CROSSSLOT) is a bug and passes as it is.
   */
  private async bounded<T>(command: Promise<T>): Promise<T> {
    const where = this.inCluster ? 'Redis Cluster (REDIS_URL)' : 'Redis (REDIS_URL)';
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new GpualertError('GA-INFRA-UNAVAILABLE', `${where}: no answer within ${this.commandTimeoutMs / 1_000} s`, { retriable: true })),
        this.commandTimeoutMs,
      );
    });
    try {
      return await Promise.race([command, late]);
    } catch (error) {
      if (error instanceof GpualertError || (error instanceof Error && error.name === 'ReplyError' && !NOT_NOW.test(error.message))) throw error;
      // ioredis's own words (e.g. "connect ECONNREFUSED 127.0.0.1:6379", "Reached the max retries per request limit"): never the URL, so no password.
      const message = error instanceof Error ? error.message : String(error);
      throw new GpualertError('GA-INFRA-UNAVAILABLE', `${where} is away: ${message.slice(0, 200)}`, { retriable: true, cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  async get(key: string): Promise<string | null> {
    return this.bounded(this.redis.get(this.name(key)));
  }

  async set(key: string, value: string, options: TtlOption = {}): Promise<void> {
    if (options.ttlMs !== undefined) await this.bounded(this.redis.set(this.name(key), value, 'PX', Math.max(1, Math.round(options.ttlMs))));
    else await this.bounded(this.redis.set(this.name(key), value));
  }

  /** One DEL; on a cluster, one per slot group (a group's keys go together, the rest one by one). */
  async delete(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    const commands = new Map<string, string[]>();
    for (const key of keys) {
      const together = this.together(key);
      const names = commands.get(together);
      if (names) names.push(this.name(key));
      else commands.set(together, [this.name(key)]);
    }
    const counts = await Promise.all([...commands.values()].map((names) => this.bounded(this.redis.del(...names))));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  async compareAndSet(key: string, expected: string | null, next: string | null, options: TtlOption = {}): Promise<boolean> {
    const result = await this.bounded(
      this.redis.gpualertCompareAndSet(
        this.name(key),
        expected === null ? '1' : '0',
        expected ?? '',
        next === null ? '1' : '0',
        next ?? '',
        String(Math.round(options.ttlMs ?? 0)),
      ),
    );
    return result === 1;
  }

  async increment(key: string, by = 1, options: TtlOption = {}): Promise<number> {
    return this.bounded(this.redis.gpualertIncrement(this.name(key), String(by), String(Math.round(options.ttlMs ?? 0))));
  }

  async expire(key: string, ttlMs: number): Promise<boolean> {
    return (await this.bounded(this.redis.pexpire(this.name(key), Math.max(1, Math.round(ttlMs))))) === 1;
  }

  async hashGet(key: string, field: string): Promise<string | null> {
    return this.bounded(this.redis.hget(this.name(key), field));
  }

  async hashSet(key: string, fields: Readonly<Record<string, string>>): Promise<void> {
    if (Object.keys(fields).length > 0) await this.bounded(this.redis.hset(this.name(key), fields));
  }

  async hashGetAll(key: string): Promise<Record<string, string>> {
    return this.bounded(this.redis.hgetall(this.name(key)));
  }

  async hashGetSome(key: string, limit: number): Promise<{ fields: Record<string, string>; total: number }> {
    const name = this.name(key);
    const total = await this.bounded(this.redis.hlen(name));
    const fields: Record<string, string> = Object.create(null);
    if (total <= limit) {
      Object.assign(fields, await this.bounded(this.redis.hgetall(name)));
      return { fields, total };
    }
    // Over the bound: scanned a page at a time until enough are read (HSCAN may repeat a field; a Record keeps it once).
    let cursor = '0';
    let taken = 0;
    do {
      const [next, flat] = await this.bounded(this.redis.hscan(name, cursor, 'COUNT', Math.min(HSCAN_PAGE, limit)));
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
    return fields.length === 0 ? 0 : this.bounded(this.redis.hdel(this.name(key), ...fields));
  }

  async sortedAdd(key: string, entries: readonly ScoredMember[]): Promise<void> {
    if (entries.length === 0) return;
    await this.bounded(this.redis.zadd(this.name(key), ...entries.flatMap((e) => [String(e.score), e.member])));
  }

  async sortedRange(key: string, min: number, max: number): Promise<ScoredMember[]> {
    const flat = await this.bounded(this.redis.zrangebyscore(this.name(key), bound(min), bound(max), 'WITHSCORES'));
    const out: ScoredMember[] = [];
    for (const [member, score] of twoByTwo(flat)) out.push({ member, score: Number(score) });
    return out;
  }

  async sortedRemove(key: string, ...members: string[]): Promise<number> {
    return members.length === 0 ? 0 : this.bounded(this.redis.zrem(this.name(key), ...members));
  }

  async sortedRemoveRange(key: string, min: number, max: number): Promise<number> {
    return this.bounded(this.redis.zremrangebyscore(this.name(key), bound(min), bound(max)));
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
