/**
 * The value, where an invariant the compiler cannot follow says it is there (a key just read from
 * the same map, a group every match of a pattern has); a broken invariant is a bug, thrown as one.
 */
export function must<T>(value: T | undefined, invariant: string): T {
  if (value === undefined) throw new Error(`gpualert bug: expected ${invariant}`);
  return value;
}

/** A list with at least one item, as a tuple the compiler can index. */
export function isNonEmpty<T>(items: readonly T[]): items is readonly [T, ...T[]] {
  return items.length > 0;
}
