import { deadletterOf, envelopeMessage, type Batch, type BatchContext, type Bus, type OutgoingMessage, type Subscription } from '@gpualert/bus';
import { DEFAULT_FORGET_AFTER_MS, dict, emptyEngineState, Engine, ENGINE_FLEET_KEY, parseFleetState, type EngineState, type RuleSet } from '@gpualert/engine';
import { AbsenceGate } from './absence-gate.ts';
import { OwnedHosts } from './owned-hosts.ts';
import { FleetShares } from './fleet-sharing.ts';
import type { Logger } from '@gpualert/log';
import type { XidCatalog } from '@gpualert/rules';
import { eventTimeProblem, must, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import {
  busReady,
  consumerReady,
  priorityQueue,
  sharedReadiness,
  storeReady,
  type Readiness,
  type RunningService,
  type ServiceContext,
} from '@gpualert/runtime';
import type { StateStore } from '@gpualert/state';
import { EngineMetrics, startEngineMetricsServer } from './engine-metrics.ts';
import { EngineFleetView } from './engine-fleet-view.ts';
import { FAST_TOPICS, waitForSamples } from './fast-lane.ts';
import { HostForgetting } from './host-forgetting.ts';

export interface EngineServiceOptions {
  readonly bus: Bus;
  readonly store: StateStore;
  readonly log: Logger;
  readonly ruleSet: RuleSet;
  readonly catalog: XidCatalog;
  /**
   * `wall`: time also passes by the machine's clock, so a host that goes silent is seen (the
   * default); `event`: only event time moves the clock (recordings, tests, `up --demo`): each
   * partition's samples tick its hosts, as `gpualert replay` does (`StreamClock`).
   */
  readonly clock: 'wall' | 'event';
  readonly group?: string;
  readonly sessionTimeoutMs?: number;
  /** How often the wall clock ticks (default 2 s). */
  readonly tickMs?: number;
  /** Told after each tick, whether or not it judged anything. */
  readonly onTick?: () => void;
  /** How long one slice of a tick judges before the next queued step may go (default 10 ms). */
  readonly tickSliceMs?: number;
  /** The pipeline's health and the fleet's state for `/metrics` (engine-metrics.ts). */
  readonly metrics?: EngineMetrics;
  /** What the console shows of the hosts this instance owns (engine-fleet-view.ts), served beside `/metrics`. */
  readonly fleetView?: EngineFleetView;
  /** Hosts unheard this long are forgotten (host-forgetting.ts; default `GPUALERT_FORGET_AFTER`, else 7 days). */
  readonly forgetAfterMs?: number;
}

const OPERATOR_KEY = 'engine:operator-resolve';

/**
 * The engine as a service: one consumer group over the input topics, partitioned by host.
 * Each batch judges its hosts in order, publishes the alerts, and saves the hosts' state before
 * the wrapper commits; a redelivered message is recognised by its
 * offset and not judged twice, and alert ids are deterministic, so a restart repeats nothing.
 *
 * Its parts: the hosts this instance owns (owned-hosts.ts, which also holds the one rollback
 * style: a failed step's hosts leave memory and are read again from the store), whether absence
 * may be judged (absence-gate.ts), the fleet's shared facts (fleet-sharing.ts), forgetting hosts
 * (host-forgetting.ts); here, the batch step and the tick's steps, one at a time.
 */
export interface RunningEngine {
  stop(): Promise<void>;
  ready(): Promise<Readiness>;
  /** Judges by these rules from the next step on (SIGHUP): between two steps, every host bound again, its state kept (Engine.reload). Resolves to the hosts whose template changed. */
  reload(ruleSet: RuleSet, catalog: XidCatalog): Promise<number>;
}

export async function startEngineService(options: EngineServiceOptions): Promise<RunningEngine> {
  const { store, log } = options;
  const engine = new Engine(options.ruleSet, options.catalog, false);
  const state: EngineState = emptyEngineState();
  options.metrics?.attach(state);
  options.fleetView?.attach(state);
  const owned = new OwnedHosts(state, engine, options.clock, store, log);
  const gate = new AbsenceGate();
  const mayJudgeAbsence = () => options.clock === 'wall' && gate.open(state);
  // The training jobs this instance follows are one document; each host's share of the stragglers'
  // and clusters' facts is a field of its own, written by its owner and read by every engine (fleet-sharing.ts).
  const saved = await store.get(ENGINE_FLEET_KEY);
  // Only its training jobs: the stragglers' and clusters' entries an older gpualert kept there come from the shares now.
  if (saved) state.fleet = { ...parseFleetState(saved, (note) => log.warn({ note }, 'engine_state_loaded_with_changes')), jobs: dict(), clusters: dict() };
  // Shares left out are said in the service's log; on the event clock a share's time is not bounded, as no event's is.
  const shares = new FleetShares(store, engine, state, { log, now: options.clock === 'wall' ? Date.now : () => Infinity });
  await shares.refresh(); // no host is this instance's yet: the whole fleet as the others shared it
  // One piece of work at a time; a fault's batch goes before the sample batches waiting (the fast lane).
  const queue = priorityQueue();
  const serial = <T>(work: () => Promise<T>, urgent = false): Promise<T> => queue.run(work, urgent);
  const hostOf = (host: string) => (owned.isLoaded(host) ? state.hosts[host] : undefined);

  // Forgetting hosts (host-forgetting.ts): asked for by `gpualert host forget`, or unheard for GPUALERT_FORGET_AFTER
  // (on the event clock, by the partitions' latest sample time). Resolves go out first; then the store forgets too.
  const forgetting = new HostForgetting(store, log, options.forgetAfterMs ?? DEFAULT_FORGET_AFTER_MS);
  const forgetDue = async () => {
    const wall = options.clock === 'wall';
    const { hosts, alerts, undo } = await forgetting.due(state, wall ? Date.now() : owned.latestEventTime(), wall ? gate.open(state) : true);
    if (hosts.length === 0) return;
    try {
      if (alerts.length > 0) await options.bus.publish(TOPICS.alerts, alerts.map(envelopeMessage));
      await forgetting.commit(hosts, (host) => owned.partitionsOf(host));
      await shares.forget(hosts);
    } catch (error) {
      undo();
      throw error;
    }
    owned.forget(hosts);
  };

  /** The batch step: its hosts judged in order, the alerts and dead letters published, the hosts saved; all before the batch commits. */
  const judgeBatch = async (batch: Batch, context: BatchContext) => {
    const hosts = [...new Set(batch.items.map((i) => i.envelope.host))];
    for (const host of hosts) owned.hostsOf(batch.partition).add(host);
    await owned.ensureLoaded(hosts);
    const position = `${batch.topic}/${batch.partition}`;
    const batchStarted = performance.now();
    // A partition's clock can tick its silent hosts too: their alerts and state go with the batch.
    const alerts: EnvelopeOf<'alert'>[] = [];
    try {
      const deadletters: OutgoingMessage[] = [];
      const receivedAt = Date.now();
      for (const { envelope, message } of batch.items) {
        const host = state.hosts[envelope.host];
        if (host && (host.offsets[position] ?? -1) >= message.offset) continue; // judged before a restart
        // On the wall clock, an event dated far from now is a wrong clock, not judged: one dated
        // ahead would hold its host's clock there and hide the host going down.
        // On the event clock, one dated far ahead of its partition's clock would move it there (StreamClock.admit).
        const problem = options.clock === 'wall' ? eventTimeProblem(envelope.ts, receivedAt) : owned.clockOf(batch.partition).admit(state, envelope);
        if (problem !== undefined) {
          deadletters.push(deadletterOf(message, group, problem));
          options.metrics?.deadletters.inc({ topic: message.topic });
          log.warn({ topic: message.topic, partition: message.partition, offset: message.offset, reason: problem }, 'event_time_out_of_window');
          continue;
        }
        alerts.push(...owned.clockOf(batch.partition).judge(state, envelope));
        must(state.hosts[envelope.host], 'judging an envelope makes its host').offsets[position] = message.offset;
        if (envelope.type === 'gpu.sample') options.metrics?.noteSample(envelope.host, envelope.data);
        options.fleetView?.note(envelope);
      }
      if (deadletters.length > 0) await context.publish(TOPICS.deadletter, deadletters);
      if (alerts.length > 0) await context.publish(TOPICS.alerts, alerts.map(envelopeMessage));
      // Not a host whose only message was dead-lettered.
      const judged = [...new Set([...hosts, ...alerts.map((a) => a.host)])].filter((host) => state.hosts[host] !== undefined);
      await owned.save(judged, batch.partition);
      // Saved before the batch commits, like the hosts, from the topics whose judging changes it.
      if (TRAINING_TOPICS.has(batch.topic)) await shares.saveTraining();
      shares.touched(judged);
      if (alerts.length > 0) log.info({ alerts: alerts.length, hosts: hosts.length }, 'alerts_published');
    } catch (error) {
      owned.drop(new Set([...hosts, ...alerts.map((a) => a.host)]));
      throw error;
    }
    gate.judged(batch.topic, batch.partition, batch.lag);
    options.metrics?.lag.set({ topic: batch.topic, partition: String(batch.partition) }, batch.lag);
    options.metrics?.batchDuration.observe({ topic: batch.topic }, (performance.now() - batchStarted) / 1000);
  };

  const group = options.group ?? 'gpualert-engine';
  let assignment = 0;
  const subscription: Subscription = await options.bus.consume({
    group,
    topics: [...ENGINE_INPUT_TOPICS],
    // A dead instance's partitions move to the survivors after this long.
    sessionTimeoutMs: options.sessionTimeoutMs ?? 10_000,
    // Behind (after an outage, at a burst), several samples of each host share one state save.
    maxBatchBytes: 2 * 1024 * 1024,
    onAssignment: (partitions) => {
      assignment += 1;
      gate.assigned(partitions);
      // A new assignment: what another instance judged meanwhile is in the store, not in memory.
      void serial(async () => {
        await shares.flush().catch((error: unknown) => log.warn({ error: String(error) }, 'engine_fleet_share_failed'));
        options.metrics?.forgetSamples();
        options.fleetView?.forget();
        const before = await owned.assign(partitions.map((p) => p.partition));
        // The hosts it no longer owns leave its view (the store has their shares); the ones it kept stay as they were.
        shares.release(before.filter((host) => state.hosts[host.host] === undefined));
      }).catch((error: unknown) => log.error({ error: String(error) }, 'engine_assignment_load_failed'));
    },
    // A whole fetch at once (every partition of it): the queue, not the fetch's order, says what is judged first.
    concurrentBatches: FETCH_BATCHES_AT_ONCE,
    // Faults and notices fetched apart from the samples (fast-lane.ts): a live host's fault waits for no fetch of samples.
    fastTopics: [...FAST_TOPICS],
    handler: async (batch, context) => {
      const urgent = await waitForSamples(batch, context, hostOf);
      return serial(() => judgeBatch(batch, context), urgent);
    },
  });

  /** The fleet-wide facts: this instance's hosts' shares out, the other instances' in, and the hosts whose cluster changed under them judged again (their alerts go out like a tick's). */
  const shareFleet = async () => {
    await shares.flush();
    await shares.saveTraining();
    const { alerts, undo } = await shares.refresh();
    if (alerts.length === 0) return;
    try {
      await options.bus.publish(TOPICS.alerts, alerts.map(envelopeMessage));
      await owned.save([...new Set(alerts.map((a) => a.host))]);
    } catch (error) {
      undo();
      throw error;
    }
  };

  /** Publishes a tick step's alerts and saves their hosts; should they not go out, the hosts are dropped (read again from the store before the next tick) and `undo` runs. */
  const publishTickAlerts = async (alerts: readonly EnvelopeOf<'alert'>[], undo?: () => Promise<unknown>) => {
    if (alerts.length === 0) return;
    const hosts = [...new Set(alerts.map((a) => a.host))];
    try {
      await options.bus.publish(TOPICS.alerts, alerts.map(envelopeMessage));
      await owned.save(hosts);
    } catch (error) {
      owned.drop(hosts, true);
      await undo?.().catch(() => {});
      throw error;
    }
  };

  /** The tick's first step: the hosts a failed tick dropped read again, and the operators' resolves; resolves to the hosts to judge, if absence may be judged. */
  const startTick = async (): Promise<{ hosts: string[]; judgingMs: number }> => {
    tickAssignment = assignment;
    await owned.reloadDropped();
    const now = Date.now();
    const resolves = await takeOperatorResolves(store);
    const judging = performance.now();
    const alerts = resolves.flatMap((fingerprint) => engine.resolveByOperator(state, fingerprint, now));
    const judgingMs = performance.now() - judging;
    // Asked for again if their resolves do not go out.
    await publishTickAlerts(alerts, () => Promise.all(resolves.map((fingerprint) => requestOperatorResolve(store, fingerprint, now))));
    return { hosts: mayJudgeAbsence() ? Object.keys(state.hosts) : [], judgingMs };
  };

  /** One slice of the tick: hosts from `from` on judged at the wall clock's time until `tickSliceMs` has passed; resolves to where the next slice starts. */
  const tickSlice = async (hosts: readonly string[], from: number): Promise<{ next: number; judgingMs: number }> => {
    // A step between two slices may have forgotten a host (looked up again here), brought a new
    // assignment, or closed the absence gate (samples back after a stall, with a backlog): the tick
    // ends there, and the next one judges the hosts as they are owned then, if absence may be judged.
    if (assignment !== tickAssignment || !mayJudgeAbsence()) return { next: hosts.length, judgingMs: 0 };
    const now = Date.now();
    const started = performance.now();
    const alerts: EnvelopeOf<'alert'>[] = [];
    let next = from;
    while (next < hosts.length) {
      const host = state.hosts[must(hosts[next], 'a host of the tick')];
      next += 1;
      if (host) alerts.push(...engine.tickHost(state, host, now));
      if (next % 32 === 0 && performance.now() - started >= tickSliceMs) break;
    }
    const judgingMs = performance.now() - started;
    await publishTickAlerts(alerts);
    return { next, judgingMs };
  };

  /**
   * The wall clock's step: absence, quiet periods, escalation, and operators' resolves. Its hosts
   * are judged in slices of about `tickSliceMs`, each a step of its own after a turn of the event
   * loop: a fault's batch waits for one slice, not for the whole fleet's tick, and probes and
   * fetches are answered between slices (a slice with nothing to publish does no I/O, so the turn
   * is taken on purpose). Should a slice's alerts not go out, its hosts are dropped (read again
   * from the store before the next tick) and the resolves asked for again: kept, a host that has
   * gone silent would be marked as alerted with its alert lost, and no later sample of it would
   * come to correct that.
   */
  const tickSliceMs = options.tickSliceMs ?? 10;
  let tickAssignment = assignment;
  let ticking: Promise<void> | undefined;
  let stopped = false;
  const tick = async () => {
    const started = performance.now();
    let judged = 0;
    try {
      const first = await serial(startTick);
      judged = first.judgingMs;
      for (let from = 0; from < first.hosts.length && !stopped;) {
        await new Promise((resolve) => setImmediate(resolve));
        const slice = await serial(() => tickSlice(first.hosts, from));
        from = slice.next;
        judged += slice.judgingMs;
      }
    } finally {
      options.metrics?.tickDuration.observe(judged / 1000);
      options.metrics?.tickWall.observe((performance.now() - started) / 1000);
    }
  };

  const timer = setInterval(() => {
    void serial(forgetDue).catch((error: unknown) => log.error({ error: String(error) }, 'engine_forget_failed'));
    void serial(shareFleet).catch((error: unknown) => log.error({ error: String(error) }, 'engine_fleet_share_failed'));
    // One tick at a time: a tick longer than the interval (a big fleet in a storm) is not started again beside itself.
    if (ticking) options.metrics?.ticksSkipped.inc();
    ticking ??= tick()
      .catch((error: unknown) => log.error({ error: String(error) }, 'engine_tick_failed'))
      .finally(() => {
        ticking = undefined;
        options.onTick?.();
      });
  }, options.tickMs ?? 2_000);
  timer.unref();

  options.metrics?.reloaded(true);
  return {
    reload: (ruleSet, catalog) =>
      serial(() => {
        options.fleetView?.reloaded(ruleSet);
        return Promise.resolve(engine.reload(state, ruleSet, catalog));
      }),
    // Ready when it can judge: Kafka answers, its consumer is in the group, the store answers.
    ready: sharedReadiness(() => [busReady(options.bus), consumerReady('input consumer', subscription), storeReady(store)]),
    async stop() {
      clearInterval(timer);
      stopped = true;
      await ticking;
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

/**
 * The topics whose judging changes the training jobs (`fleet.training`): a job's events
 * (`noteJobEvent`), and a fatal kernel event on a job's GPU (the `job_fault` judge notes the fault).
 */
const TRAINING_TOPICS: ReadonlySet<string> = new Set([TOPICS.jobEvents, TOPICS.kernelEvents]);

/** How many partitions' batches the engine takes at once: every partition it can hold (7 topics × GPUALERT_PARTITIONS up to 36). */
const FETCH_BATCHES_AT_ONCE = 256;

/** Every topic the engine reads, each keyed by host (one consumer group: partition p of each to one instance). */
export const ENGINE_INPUT_TOPICS = [
  TOPICS.gpuSamples,
  TOPICS.kernelEvents,
  TOPICS.providerEvents,
  TOPICS.hostInventory,
  TOPICS.hostSamples,
  TOPICS.bmcEvents,
  TOPICS.jobEvents,
] as const;

/** The engine as `gpualert up` runs it: the judging itself, and its metrics when it serves them (a reload updates both). */
export interface StartedEngine extends RunningService {
  readonly name: 'engine';
  readonly engine: RunningEngine;
  readonly metrics?: EngineMetrics;
  /** The console's view of the fleet, in-process (`up`'s console reads it directly). */
  readonly fleetView: EngineFleetView;
  /** Where /metrics answers, for `gpualert up`'s banner; absent when the engine runs without it. */
  readonly metricsPort?: number;
}

/** How `gpualert up` runs its engine: with `metrics`, its `/metrics`, `/healthz` and `/readyz` on that port. */
export interface EngineServiceSettings {
  readonly metrics?: EngineMetricsServing;
  readonly forgetAfterMs?: number;
}

/** The engine as one of `gpualert up`'s services. */
export function engineService(
  ruleSet: RuleSet,
  catalog: XidCatalog,
  clock: 'wall' | 'event',
  settings: EngineServiceSettings = {},
): { readonly name: 'engine'; start(context: ServiceContext): Promise<StartedEngine> } {
  const { metrics, forgetAfterMs } = settings;
  return {
    name: 'engine',
    async start(context) {
      const served = metrics ? new EngineMetrics(ruleSet, metrics.prices) : undefined;
      const fleetView = new EngineFleetView(ruleSet, clock);
      const service = await startEngineService({
        fleetView,
        bus: context.bus,
        store: context.store,
        log: context.log,
        ruleSet,
        catalog,
        clock,
        ...(served ? { metrics: served } : {}),
        ...(forgetAfterMs !== undefined ? { forgetAfterMs } : {}),
      });
      const bare: StartedEngine = { name: 'engine', engine: service, fleetView, stop: () => service.stop() };
      if (!metrics || !served) return bare;
      try {
        const server = await startEngineMetricsServer(served, metrics.port, metrics.listen, {}, () => service.ready(), fleetView);
        return {
          name: 'engine',
          engine: service,
          fleetView,
          metrics: served,
          metricsPort: server.port,
          stop: async () => {
            await server.close();
            await service.stop();
          },
        };
      } catch (error) {
        // A busy metrics port must not stop the judging: the engine runs on without /metrics.
        context.log.error({ port: metrics.port, error: String(error) }, 'engine_metrics_port_unavailable');
        return bare;
      }
    },
  };
}

/** Where the engine serves its metrics in `gpualert up` (and with which prices for idle cost). */
export interface EngineMetricsServing {
  readonly port: number;
  readonly listen?: string;
  readonly prices?: ConstructorParameters<typeof EngineMetrics>[1];
}
