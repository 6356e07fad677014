import type { StateStore } from '@gpualert/state';

/**
 * A replica's own part of the shared store: every key under `notifier:replica:<name>:`. Each
 * notifier of a cluster keeps its groups and firing alerts there (as each Alertmanager keeps its
 * own aggregation groups), while silences, the notification log, the page log and the outbox stay
 * shared. The name is checked by the settings (replicaName), so it never holds a key separator
 * of its own choosing.
 */
export function replicaStore(store: StateStore, replica: string): StateStore {
  const prefix = `notifier:replica:${replica}:`;
  const k = (key: string) => prefix + key;
  return {
    kind: store.kind,
    get: (key) => store.get(k(key)),
    set: (key, value, options) => store.set(k(key), value, options),
    delete: (...keys) => store.delete(...keys.map(k)),
    compareAndSet: (key, expected, next, options) => store.compareAndSet(k(key), expected, next, options),
    increment: (key, by, options) => store.increment(k(key), by, options),
    expire: (key, ttlMs) => store.expire(k(key), ttlMs),
    hashGet: (key, field) => store.hashGet(k(key), field),
    hashSet: (key, fields) => store.hashSet(k(key), fields),
    hashGetAll: (key) => store.hashGetAll(k(key)),
    hashGetSome: (key, limit) => store.hashGetSome(k(key), limit),
    hashDelete: (key, ...fields) => store.hashDelete(k(key), ...fields),
    sortedAdd: (key, entries) => store.sortedAdd(k(key), entries),
    sortedRange: (key, min, max) => store.sortedRange(k(key), min, max),
    sortedRemove: (key, ...members) => store.sortedRemove(k(key), ...members),
    sortedRemoveRange: (key, min, max) => store.sortedRemoveRange(k(key), min, max),
    // The store is the caller's, shared with the rest of the notifier: closed by it, not here.
    close: () => Promise.resolve(),
  };
}
