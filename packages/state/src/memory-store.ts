import type { ScoredMember, StateStore, TtlOption } from './state-store.ts';
import { GpualertError } from '@gpualert/schema';

type Value =
  { readonly kind: 'string'; value: string } | { readonly kind: 'hash'; value: Map<string, string> } | { readonly kind: 'sorted'; value: Map<string, number> };

interface Entry {
  data: Value;
  expiresAt: number | undefined;
}

/** The data behind one embedded store; stores made over the same data are clients of one server. */
export class MemoryStoreData {
  readonly entries = new Map<string, Entry>();
}

export interface MemoryStoreOptions {
  readonly prefix?: string;
  readonly data?: MemoryStoreData;
  /** The clock TTLs are measured by. */
  readonly now?: () => number;
}

class WrongTypeError extends GpualertError {
  constructor(key: string, kind: string) {
    super('GA-STORE-WRONG-TYPE', `WRONGTYPE: ${key} holds a ${kind}`);
  }
}

/** The embedded state store: Redis's semantics for what gpualert uses, in one process. */
export class MemoryStore implements StateStore {
  readonly kind = 'memory' as const;
  private readonly entries: Map<string, Entry>;
  private readonly prefix: string;
  private readonly now: () => number;
  private writes = 0;

  constructor(options: MemoryStoreOptions = {}) {
    this.entries = (options.data ?? new MemoryStoreData()).entries;
    this.prefix = options.prefix ?? '';
    this.now = options.now ?? Date.now;
  }

  async get(key: string): Promise<string | null> {
    return this.string(key)?.value ?? null;
  }

  async set(key: string, value: string, options: TtlOption = {}): Promise<void> {
    this.put(key, { kind: 'string', value }, options.ttlMs);
  }

  async delete(...keys: string[]): Promise<number> {
    let count = 0;
    for (const key of keys) if (this.live(key) && this.entries.delete(this.prefix + key)) count += 1;
    return count;
  }

  async compareAndSet(key: string, expected: string | null, next: string | null, options: TtlOption = {}): Promise<boolean> {
    const current = this.string(key)?.value ?? null;
    if (current !== expected) return false;
    if (next === null) this.entries.delete(this.prefix + key);
    else this.put(key, { kind: 'string', value: next }, options.ttlMs);
    return true;
  }

  async increment(key: string, by = 1, options: TtlOption = {}): Promise<number> {
    const current = this.string(key);
    const value = Number(current?.value ?? 0) + by;
    if (current) current.value = String(value);
    else this.put(key, { kind: 'string', value: String(value) }, options.ttlMs);
    return value;
  }

  async expire(key: string, ttlMs: number): Promise<boolean> {
    const entry = this.live(key);
    if (!entry) return false;
    entry.expiresAt = this.now() + ttlMs;
    return true;
  }

  async hashGet(key: string, field: string): Promise<string | null> {
    return this.hash(key)?.get(field) ?? null;
  }

  async hashSet(key: string, fields: Readonly<Record<string, string>>): Promise<void> {
    const hash = this.hash(key) ?? this.put(key, { kind: 'hash', value: new Map() }).value;
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
  }

  async hashGetAll(key: string): Promise<Record<string, string>> {
    return Object.fromEntries(this.hash(key) ?? []);
  }

  async hashGetSome(key: string, limit: number): Promise<{ fields: Record<string, string>; total: number }> {
    const hash = this.hash(key);
    const fields: Record<string, string> = Object.create(null);
    if (!hash) return { fields, total: 0 };
    let taken = 0;
    for (const [field, value] of hash) {
      if (taken >= limit) break;
      fields[field] = value;
      taken += 1;
    }
    return { fields, total: hash.size };
  }

  async hashDelete(key: string, ...fields: string[]): Promise<number> {
    const hash = this.hash(key);
    if (!hash) return 0;
    const count = fields.filter((f) => hash.delete(f)).length;
    if (hash.size === 0) this.entries.delete(this.prefix + key);
    return count;
  }

  async sortedAdd(key: string, entries: readonly ScoredMember[]): Promise<void> {
    const set = this.sorted(key) ?? this.put(key, { kind: 'sorted', value: new Map() }).value;
    for (const { member, score } of entries) set.set(member, score);
  }

  async sortedRange(key: string, min: number, max: number): Promise<ScoredMember[]> {
    return [...(this.sorted(key) ?? [])]
      .filter(([, score]) => score >= min && score <= max)
      .map(([member, score]) => ({ member, score }))
      .sort((a, b) => a.score - b.score || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
  }

  async sortedRemove(key: string, ...members: string[]): Promise<number> {
    const set = this.sorted(key);
    if (!set) return 0;
    const count = members.filter((m) => set.delete(m)).length;
    if (set.size === 0) this.entries.delete(this.prefix + key);
    return count;
  }

  async sortedRemoveRange(key: string, min: number, max: number): Promise<number> {
    const doomed = (await this.sortedRange(key, min, max)).map((e) => e.member);
    return this.sortedRemove(key, ...doomed);
  }

  async close(): Promise<void> {}

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(this.prefix + key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= this.now()) {
      this.entries.delete(this.prefix + key);
      return undefined;
    }
    return entry;
  }

  private string(key: string) {
    return this.typed(key, 'string');
  }

  private hash(key: string) {
    return this.typed(key, 'hash')?.value;
  }

  private sorted(key: string) {
    return this.typed(key, 'sorted')?.value;
  }

  private typed<K extends Value['kind']>(key: string, kind: K): Extract<Value, { kind: K }> | undefined {
    const entry = this.live(key);
    if (!entry) return undefined;
    if (entry.data.kind !== kind) throw new WrongTypeError(key, entry.data.kind);
    return entry.data as Extract<Value, { kind: K }>;
  }

  private put<V extends Value>(key: string, data: V, ttlMs?: number): V {
    this.entries.set(this.prefix + key, { data, expiresAt: ttlMs === undefined ? undefined : this.now() + ttlMs });
    if (++this.writes % 10_000 === 0) this.sweep();
    return data;
  }

  /** Expired keys are dropped when read; this bounds the ones nobody reads again. */
  private sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt !== undefined && entry.expiresAt <= now) this.entries.delete(key);
    }
  }
}
