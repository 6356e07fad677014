import type { Bus, Subscription } from '@gpualert/bus';
import { redactSecrets } from '@gpualert/log';
import type { StateStore } from '@gpualert/state';

/** One thing a service needs to do its work: undefined when it has it, else why not. */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<string | undefined>;
}

/** What `/readyz` answers: ready only when every check is; each check's `ok` or its reason. */
export interface Readiness {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, string>>;
}

/** How long one check may take before it counts as not answering (a probe's own timeout is longer). */
export const READINESS_CHECK_MS = 2_000;

/** Runs the checks at once, each bounded by READINESS_CHECK_MS. */
export async function readiness(checks: readonly ReadinessCheck[], timeoutMs = READINESS_CHECK_MS): Promise<Readiness> {
  const results = await Promise.all(
    checks.map(async (c) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
        timer.unref();
      });
      try {
        return [
          c.name,
          (await Promise.race([c.check().catch((error: unknown) => (error instanceof Error ? error.message : String(error))), late])) ?? 'ok',
        ] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  // A reason names what failed, never a credential in it (a URL's password, a token).
  return { ready: results.every(([, r]) => r === 'ok'), checks: Object.fromEntries(results.map(([name, r]) => [name, redactSecrets(r)])) };
}

/**
 * `readiness` for a probe endpoint: probes that arrive while a check runs share its answer rather
 * than each starting their own. A frozen Redis and a storm of probes (20,000 of them held 66 MB)
 * cost one check in flight, never one per probe.
 */
export function sharedReadiness(checks: () => readonly ReadinessCheck[], timeoutMs = READINESS_CHECK_MS): () => Promise<Readiness> {
  let inFlight: Promise<Readiness> | undefined;
  return () => {
    inFlight ??= readiness(checks(), timeoutMs).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

/** The state store answers a read. */
export function storeReady(store: StateStore): ReadinessCheck {
  return { name: 'store', check: async () => void (await store.get('gpualert:readiness-probe')) };
}

/** The bus answers (Kafka: its cluster is described by a broker). */
export function busReady(bus: Bus): ReadinessCheck {
  return { name: 'bus', check: () => bus.ready() };
}

/**
 * A consumer is in its group: joined, with its partitions (none is legitimate: more members than
 * partitions). A rebalance of a group it was in counts as in for a while (Subscription.joined):
 * every replica rebalances at once when one joins, and none should leave its Service for that.
 */
export function consumerReady(name: string, subscription: Subscription): ReadinessCheck {
  return { name, check: () => Promise.resolve(subscription.joined() ? undefined : 'not in its consumer group yet (joining or rebalancing)') };
}
