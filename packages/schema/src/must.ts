import { GpualertError } from './gpualert-error.ts';

/**
 * The value, where the code around it guarantees there is one (an index inside the bounds it just
 * checked, a key it just set): a broken guarantee is a bug, so it throws GA-INTERNAL naming `why`
 * rather than letting `undefined` travel on. Instead of `x!`, which says nothing when it is wrong.
 */
export function must<T>(value: T | undefined | null, why: string): T {
  if (value === undefined || value === null) throw new GpualertError('GA-INTERNAL', `internal invariant broken: ${why}`);
  return value;
}
