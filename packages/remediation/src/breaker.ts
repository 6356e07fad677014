/**
 * The circuit breaker: never more than `maxShare` of a partition out of service because of
 * gpualert within `windowMs` (NVSentinel's cordon limit, medik8s' minHealthy). Pure: the core
 * says who is out and when each was taken out; this says whether one more may go.
 */
export interface BreakerInput {
  readonly partition: string;
  /** The partition's node count, when known. */
  readonly size: number | undefined;
  readonly maxShare: number;
  /** Hosts of the partition gpualert holds out of service now or took out within the window, this one aside. */
  readonly out: ReadonlySet<string>;
}

export type BreakerVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string; readonly trips: boolean };

/**
 * How many hosts of `size` may be out at once: the share rounded down (30 % of 10 is 3), and
 * never fewer than one. One broken node may always be taken out, whatever the partition's size
 * (10 % of a 5-node partition rounds down to none, and a node whose GPU fell off the bus would
 * keep taking jobs); a second one needs the share.
 */
export function breakerLimit(size: number, maxShare: number): number {
  return Math.max(1, Math.floor(size * maxShare + 1e-9));
}

export function judgeBreaker(input: BreakerInput): BreakerVerdict {
  if (input.size === undefined)
    return {
      allowed: false,
      trips: false,
      reason: `the size of partition ${JSON.stringify(input.partition)} is unknown, so the breaker cannot judge: name it under partitions: or let the executor read it`,
    };
  const limit = breakerLimit(input.size, input.maxShare);
  if (input.out.size + 1 <= limit) return { allowed: true };
  return {
    allowed: false,
    trips: true,
    reason: `circuit breaker: ${input.out.size} of ${input.size} hosts of partition ${JSON.stringify(input.partition)} already out; one more passes ${Math.round(input.maxShare * 100)} % (${limit})`,
  };
}
