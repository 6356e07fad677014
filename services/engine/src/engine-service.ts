import { envelopeMessage, type Bus, type Subscription } from '@gpualert/bus';
import { Engine, newHostState, type EngineState, type FleetState, type HostState, type RuleSet } from '@gpualert/engine';
import type { Logger } from '@gpualert/log';
import type { XidCatalog } from '@gpualert/rules';
import { TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { serialQueue, type ServiceDefinition } from '@gpualert/runtime';
import type { StateStore } from '@gpualert/state';

export interface EngineServiceOptions {
  readonly bus: Bus;
  readonly store: StateStore;
  readonly log: Logger;
  readonly ruleSet: RuleSet;
  readonly catalog: XidCatalog;
  /**
   * `wall`: time also passes by the machine's clock, so a host that goes silent is seen (the
   * default); `event`: only event time moves the clock (recordings, tests).
   */
  readonly clock: 'wall' | 'event';
  readonly group?: string;
  readonly sessionTimeoutMs?: number;
  /** How often the wall clock ticks (default 2 s). */
  readonly tickMs?: number;
  /** Told after each tick, whether or not it judged anything. */
  readonly onTick?: () => void;
}

const HOST_KEY = (host: string) => `engine:host:${host}`;
const FLEET_KEY = 'engine:fleet';
const OPERATOR_KEY = 'engine:operator-resolve';

/**
 * The engine as a service: one consumer group over the input topics, partitioned by host.
 * Each batch loads its hosts' state from the store, judges in order, publishes the alerts,
 * and saves the state before the wrapper commits; a redelivered message is recognised by its
 * offset and not judged twice, and alert ids are deterministic, so a restart repeats nothing.
 */
export async function startEngineService(options: EngineServiceOptions): Promise<{ stop(): Promise<void> }> {
  const engine = new Engine(options.ruleSet, options.catalog, false);
  const state: EngineState = { hosts: {}, fleet: { jobs: {}, clusters: {} } };
  const loadFleet = async () => {
    const saved = await options.store.get(FLEET_KEY);
    if (saved) state.fleet = JSON.parse(saved) as FleetState;
  };
  await loadFleet();
  const queue = serialQueue();
  const serial = <T>(work: () => Promise<T>): Promise<T> => queue.run(work);
  // Which samples partition each host's samples come in on, the partitions this instance owns, and
  // how far behind each of them was at its last batch. The wall clock judges absence only for the
  // hosts this instance owns, and only while it is caught up: a host whose partition moved to
  // another instance, or whose samples wait in a backlog (after an outage or a restart), has not
  // gone silent, and calling it down would page for the pipeline rather than the host.
  const partitionOf = new Map<string, string>();
  let owned = new Set<string>();
  const behind = new Map<string, number>();
  const catchingUp = () => [...behind].some(([position, lag]) => lag > 0 && owned.has(position));

  const subscription: Subscription = await options.bus.consume({
    group: options.group ?? 'gpualert-engine',
    topics: [TOPICS.gpuSamples, TOPICS.kernelEvents, TOPICS.providerEvents, TOPICS.hostInventory],
    // A dead instance's partitions move to the survivors after this long.
    sessionTimeoutMs: options.sessionTimeoutMs ?? 10_000,
    onAssignment: (partitions) => {
      owned = new Set(partitions.map((p) => `${p.topic}/${p.partition}`));
      for (const position of behind.keys()) if (!owned.has(position)) behind.delete(position);
      // Hosts that moved away are another instance's now: forget them here (the store keeps them).
      void serial(async () => {
        for (const [host, position] of partitionOf) {
          if (owned.has(position)) continue;
          delete state.hosts[host];
          partitionOf.delete(host);
        }
      });
    },
    handler: (batch, context) =>
      serial(async () => {
        const hosts = [...new Set(batch.items.map((i) => i.envelope.host))];
        await Promise.all(hosts.map(async (host) => {
          const saved = await options.store.get(HOST_KEY(host));
          state.hosts[host] = saved ? (JSON.parse(saved) as HostState) : newHostState(host, {}, 'default');
          if (!saved) delete state.hosts[host]; // let the engine bind a template on first sight
        }));
        const alerts: EnvelopeOf<'alert'>[] = [];
        const position = `${batch.topic}/${batch.partition}`;
        behind.set(position, batch.lag);
        if (batch.topic === TOPICS.gpuSamples) for (const host of hosts) partitionOf.set(host, position);
        for (const { envelope, message } of batch.items) {
          const host = state.hosts[envelope.host];
          if (host && (host.offsets[position] ?? -1) >= message.offset) continue; // judged before a restart
          alerts.push(...engine.advance(state, envelope));
          state.hosts[envelope.host]!.offsets[position] = message.offset;
        }
        if (alerts.length > 0) await context.publish(TOPICS.alerts, alerts.map(envelopeMessage));
        await Promise.all(hosts.map((host) => options.store.set(HOST_KEY(host), JSON.stringify(state.hosts[host]))));
        await options.store.set(FLEET_KEY, JSON.stringify(state.fleet));
        if (alerts.length > 0) options.log.info({ alerts: alerts.length, hosts: hosts.length }, 'alerts_published');
      }),
  });

  // Wall-clock ticks: absence, quiet periods, escalation; and operators' resolves.
  const timer = setInterval(() => {
    void serial(async () => {
      const alerts: EnvelopeOf<'alert'>[] = [];
      const now = Date.now();
      // What each host was before this tick: if its alerts cannot be published, the tick is undone
      // and the next one decides again; kept, a host that has gone silent would be marked as
      // alerted with its alert lost, and no later sample of it would come to correct that.
      const before = new Map(Object.entries(state.hosts).map(([host, s]) => [host, JSON.stringify(s)]));
      const resolves = await takeOperatorResolves(options.store);
      for (const fingerprint of resolves) alerts.push(...engine.resolveByOperator(state, fingerprint, now));
      if (options.clock === 'wall' && !catchingUp()) alerts.push(...engine.tick(state, now));
      options.onTick?.();
      if (alerts.length === 0) return;
      const hosts = [...new Set(alerts.map((a) => a.host))];
      try {
        await options.bus.publish(TOPICS.alerts, alerts.map(envelopeMessage));
        await Promise.all(hosts.map((host) => options.store.set(HOST_KEY(host), JSON.stringify(state.hosts[host]))));
      } catch (error) {
        for (const host of hosts) if (before.has(host)) state.hosts[host] = JSON.parse(before.get(host)!) as HostState;
        await Promise.all(resolves.map((fingerprint) => requestOperatorResolve(options.store, fingerprint, now))).catch(() => {});
        throw error;
      }
    }).catch((error: unknown) => options.log.error({ error: String(error) }, 'engine_tick_failed'));
  }, options.tickMs ?? 2_000);
  timer.unref();

  return {
    async stop() {
      clearInterval(timer);
      await subscription.stop();
      await queue.idle();
    },
  };
}

/** `gpualert alert resolve <fingerprint>` leaves the fingerprint here for the engine. */
export async function requestOperatorResolve(store: StateStore, fingerprint: string, at: number): Promise<void> {
  await store.sortedAdd(OPERATOR_KEY, [{ member: fingerprint, score: at }]);
}

async function takeOperatorResolves(store: StateStore): Promise<string[]> {
  const pending = await store.sortedRange(OPERATOR_KEY, -Infinity, Infinity);
  if (pending.length === 0) return [];
  await store.sortedRemove(OPERATOR_KEY, ...pending.map((p) => p.member));
  return pending.map((p) => p.member);
}

/** The engine as one of `gpualert up`'s services. */
export function engineService(ruleSet: RuleSet, catalog: XidCatalog, clock: 'wall' | 'event'): ServiceDefinition {
  return {
    name: 'engine',
    async start(context) {
      const service = await startEngineService({ bus: context.bus, store: context.store, log: context.log, ruleSet, catalog, clock });
      return { name: 'engine', stop: () => service.stop() };
    },
  };
}
