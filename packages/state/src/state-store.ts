export interface TtlOption {
  /** Milliseconds until the key expires; none means it stays until deleted. */
  readonly ttlMs?: number;
}

export interface ScoredMember {
  readonly member: string;
  readonly score: number;
}

/**
 * The small state store the engine and notifier need. Every key is scoped by the deployment's
 * prefix, so several deployments (and tests) can share one Redis.
 */
export interface StateStore {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options?: TtlOption): Promise<void>;
  /** Deletes keys of any kind; resolves to how many existed. */
  delete(...keys: string[]): Promise<number>;
  /**
   * Atomically replaces `expected` (null: the key is absent) with `next` (null: delete it).
   * Resolves to whether it did; the basis of every read-modify-write.
   */
  compareAndSet(key: string, expected: string | null, next: string | null, options?: TtlOption): Promise<boolean>;
  /** Adds `by` to a counter (absent counts as 0); the TTL starts when the counter is created. */
  increment(key: string, by?: number, options?: TtlOption): Promise<number>;
  expire(key: string, ttlMs: number): Promise<boolean>;

  hashGet(key: string, field: string): Promise<string | null>;
  hashSet(key: string, fields: Readonly<Record<string, string>>): Promise<void>;
  hashGetAll(key: string): Promise<Record<string, string>>;
  /**
   * At most `limit` fields of a hash (which ones, when it holds more, is the store's choice), and
   * how many it holds: a hash anyone may write is read within a bound.
   */
  hashGetSome(key: string, limit: number): Promise<{ fields: Record<string, string>; total: number }>;
  hashDelete(key: string, ...fields: string[]): Promise<number>;

  sortedAdd(key: string, entries: readonly ScoredMember[]): Promise<void>;
  /** Members with min <= score <= max, lowest score first. */
  sortedRange(key: string, min: number, max: number): Promise<ScoredMember[]>;
  sortedRemove(key: string, ...members: string[]): Promise<number>;
  sortedRemoveRange(key: string, min: number, max: number): Promise<number>;

  close(): Promise<void>;
}
