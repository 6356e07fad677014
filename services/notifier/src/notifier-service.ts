import { randomUUID } from 'node:crypto';
import type { Bus, Subscription } from '@gpualert/bus';
import { redactSecrets, type Logger } from '@gpualert/log';
import { NotifierCore, type Decision, type Notification, type NotifierState, type RoutesFile } from '@gpualert/notify';
import {
  busReady,
  consumerReady,
  serialQueue,
  sharedReadiness,
  storeReady,
  type Readiness,
  type RunningService,
  type ServiceDefinition,
} from '@gpualert/runtime';
import { TOPICS } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import type { NotifierView } from './alertmanager-api.ts';
import { DeliveryLoop } from './delivery-loop.ts';
import type { RetryPolicy } from './delivery.ts';
import type { NotifierMetrics } from './notifier-http.ts';
import { NotifierStateStore, STATE_KEY } from './notifier-state-store.ts';
import { NOTIFIER_HEARTBEAT_MS, Outbox, type Outgoing } from './outbox.ts';
import { SharedPageLog } from './shared-page-log.ts';
import { SilenceSync } from './silence-sync.ts';

export interface NotifierOptions {
  readonly bus: Bus;
  readonly store: StateStore;
  readonly log: Logger;
  readonly routes: RoutesFile;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly retry?: RetryPolicy;
  /** How often groups are looked at for group_wait and group_interval. */
  readonly flushEveryMs?: number;
  readonly group?: string;
  readonly metrics?: NotifierMetrics;
}

/** How many unreadable entries one warning line names (the count is always whole). */
const MAX_NAMED_IN_WARNING = 5;
/** Flushing done between two turns of the event loop, in ms (one group is never split). */
const FLUSH_SLICE_MS = 10;

/** The running notifier: stop it, or read its routes and state (as last saved) for the API, and whether it can do its work (`/readyz`). */
export interface RunningNotifier extends RunningService, NotifierView {
  ready(): Promise<Readiness>;
  /**
   * Runs on these routes from the next step on (SIGHUP, POST /-/reload): channels built first (one
   * that cannot be throws and nothing changes), then between two steps the groups routed again
   * (NotifierCore.adopt), the state saved. Groups, silences and pages survive.
   */
  reload(routes: RoutesFile): Promise<{ kept: number; moved: number; groups: number }>;
}

/**
 * The notifier as a service. Decisions come from the pure core (its stages); each message to send
 * is written to an outbox in the store before the alert's offset is committed, and leaves it only
 * once the destination took it (or it was dead-lettered), so a restart resends what was in flight
 * and loses nothing; pages carry the fingerprint as dedup key, so a resend is not a second page.
 *
 * Its parts: the state store (notifier-state-store.ts, what each step changed), the shared page
 * log (shared-page-log.ts), the outbox and its owners (outbox.ts), the delivery loop
 * (delivery-loop.ts), the silences kept with the store's (silence-sync.ts); here, the step that
 * ties them (one at a time, rolled back whole when it fails), the tick and the heartbeat.
 */
export async function startNotifier(options: NotifierOptions): Promise<RunningNotifier> {
  const { store, log } = options;
  let routes = options.routes;
  let core = new NotifierCore(routes);
  /** This run of the notifier: its outbox entries carry it, and its heartbeat key says it is alive. */
  const outbox = new Outbox(store, randomUUID().slice(0, 12), log);
  await outbox.alive();
  const pageLog = new SharedPageLog(
    store,
    routes.receivers.map((r) => r.name),
  );
  /** Each step saves what it changed; what the last step committed is what a failed one goes back to. */
  const saved = new NotifierStateStore(store, log);
  const state: NotifierState = await saved.load();
  const seeded = await pageLog.seed(state);
  if (seeded > 0) log.info({ faults: seeded }, 'page_log_seeded');
  const deliveries = new DeliveryLoop({
    routes: options.routes,
    env: options.env,
    bus: options.bus,
    log,
    outbox,
    retry: options.retry,
    metrics: options.metrics,
  });
  const silences = new SilenceSync(store, log, (data, host) => deliveries.record(data, host));

  /**
   * A page taken over from a dead notifier whose fault has resolved since (its resolve went out
   * first, from the notifier that took its partition): the resolve is queued again behind it, so
   * the pager does not keep open an incident whose resolve it saw before its trigger.
   */
  const resolveIfOver = async (page: Outgoing) => {
    const n = page.notification;
    if (n.reason !== 'page' || n.alerts.length === 0) return;
    for (const alert of n.alerts) if (await pageLog.firing(alert.fingerprint)) return;
    const alerts = n.alerts.map((a) => ({ ...a, status: 'resolved' as const }));
    const resolve: Notification = {
      ...n,
      id: `${n.id}:resolve`,
      reason: 'page_resolve',
      alerts,
      firing: 0,
      ...(n.alertmanager ? { alertmanager: { ...n.alertmanager, alerts } } : {}),
    };
    const queuedAt = Date.now();
    await outbox.put([resolve], queuedAt);
    log.info({ id: resolve.id, receiver: resolve.receiver }, 'outbox_resolve_requeued');
    deliveries.enqueue(resolve, queuedAt);
  };

  /**
   * The groups whose time has come, flushed one at a time, a turn of the event loop after every
   * FLUSH_SLICE_MS: three groups of 20,000 alerts in one piece held the loop 60 ms. Only steps
   * change the state, one at a time, so nothing moves while this waits.
   */
  const flush = async (now: number): Promise<Decision[]> => {
    const decisions: Decision[] = [];
    let slice = performance.now();
    for (const key of core.dueGroups(state, now)) {
      decisions.push(...core.flushGroup(state, key, now));
      if (performance.now() - slice > FLUSH_SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
    core.expireSilences(state, now);
    return decisions;
  };

  /** Ends a step: its messages to the outbox, what it held back recorded, the state saved, then the messages queued. */
  const act = async (decisions: Decision[], fingerprints: readonly string[] = []) => {
    const sends = decisions.flatMap((d) => ('send' in d ? [d.send] : []));
    await outbox.put(sends);
    for (const d of decisions) {
      if ('suppressed' in d) {
        const { receiver, fingerprints: held, reason, detail } = d.suppressed;
        await deliveries.record(
          { receiver, channel: deliveries.channelOf(receiver), fingerprints: [...held], reason: `${reason}: ${detail}`, outcome: 'suppressed', attempt: 0 },
          'notifier',
        );
      }
    }
    await saved.save(state);
    // Last: should it fail, the step is decided again from the shared log, and its sends (same ids) queued then.
    await pageLog.save(state, fingerprints);
    for (const n of sends) deliveries.enqueue(n, Date.now());
  };

  // Whatever was in flight when the last run stopped goes out first.
  for (const pending of await outbox.load()) {
    log.info({ id: pending.notification.id, receiver: pending.notification.receiver }, 'outbox_resend');
    deliveries.enqueue(pending.notification, pending.queuedAt);
    await resolveIfOver(pending);
  }

  const queue = serialQueue();
  /**
   * One decision step at a time, all or nothing: the core changes the state as it decides, so when
   * acting on a decision fails (the store or Kafka away), the state goes back to what the last
   * step saved (only steps change it, and each ends by saving it) and the step is decided again
   * on the retry. Kept, a failed flush would mark a group as told while its notification never
   * reached the outbox: a page lost.
   */
  const transact = <T>(work: () => Promise<T>): Promise<T> =>
    queue.run(async () => {
      // A turn of the event loop before each step: on the in-process bus and store a storm's steps
      // otherwise follow each other as one chain of microtasks, and nothing else in the process
      // (probes, the API, the engine and intake of `gpualert up`) runs until the last has.
      await new Promise((resolve) => setImmediate(resolve));
      try {
        return await work();
      } catch (error) {
        // What goes back is this run's own save; should some of it not read back (past a load bound), say so rather than drop it unannounced.
        const unreadable = saved.rollback(state);
        if (unreadable.length > 0)
          log.warn({ key: STATE_KEY, unreadable: unreadable.length, examples: unreadable.slice(0, MAX_NAMED_IN_WARNING) }, 'state_rebuilt');
        throw error;
      }
    });

  /** The alerts' step: a batch of alerts decided, then what is due flushed. */
  const subscription: Subscription = await options.bus.consume({
    group: options.group ?? 'gpualert-notifier',
    topics: [TOPICS.alerts],
    sessionTimeoutMs: 10_000,
    handler: (batch) =>
      transact(async () => {
        state.silences = await silences.current(state);
        // What every notifier paged for these faults: another may have paged (or resolved) them before this one took their partition.
        const fingerprints = batch.items.flatMap(({ envelope }) => (envelope.type === 'alert' ? [envelope.data.fingerprint] : []));
        await pageLog.load(state, fingerprints);
        const before = silences.seen(state);
        const decisions: Decision[] = [];
        for (const { envelope } of batch.items) {
          if (envelope.type === 'alert') decisions.push(...core.ingest(state, envelope, Date.now()));
        }
        await silences.shareOwn(state, before);
        decisions.push(...(await flush(Date.now())));
        await act(decisions, fingerprints);
      }),
  });

  /** The tick's step: new silences said, what is due flushed, silences past their end expired and said. */
  await silences.start();
  const timer = setInterval(() => {
    void transact(async () => {
      state.silences = await silences.current(state);
      await silences.announceNew(state);
      const active = silences.active(state);
      const decisions = await flush(Date.now());
      await silences.announceExpired(state, active);
      await act(decisions);
    }).catch((error: unknown) => log.error({ error: String(error) }, 'notifier_flush_failed'));
  }, options.flushEveryMs ?? 1_000);
  timer.unref();

  /** Failover: this notifier says it is alive, and sends what a dead one left in the outbox. */
  let stopped = false;
  const heartbeat = setInterval(() => {
    if (stopped) return;
    void (async () => {
      await outbox.alive();
      for (const adopted of await outbox.orphans()) {
        deliveries.enqueue(adopted.notification, adopted.queuedAt);
        await resolveIfOver(adopted);
      }
    })().catch((error: unknown) => log.error({ error: redactSecrets(String(error)) }, 'notifier_heartbeat_failed'));
  }, NOTIFIER_HEARTBEAT_MS);
  heartbeat.unref();
  log.info({ receivers: deliveries.receivers, instance: outbox.instance }, 'notifier_started');

  return {
    name: 'notifier',
    get routes() {
      return routes;
    },
    reload: (next) =>
      transact(async () => {
        // Built first: a channel that cannot be built refuses the reload before anything changed.
        const channels = deliveries.prepare(next);
        const candidate = new NotifierCore(next);
        const moved = await candidate.adopt(state, Date.now(), () => new Promise((resolve) => setImmediate(resolve)));
        // Should the save fail, the step rolls the state back and the old routes and channels stay.
        await saved.save(state);
        deliveries.apply(channels);
        core = candidate;
        routes = next;
        pageLog.setReceivers(next.receivers.map((r) => r.name));
        log.info({ receivers: deliveries.receivers, ...moved }, 'config_reloaded');
        return moved;
      }),
    // The API reads the state as the last step saved it: never half a step, never a step rolled back.
    state: () => saved.snapshot(),
    // Ready when it can read alerts and keep its outbox: Kafka answers, its consumer is in the group, the store answers.
    ready: sharedReadiness(() => [busReady(options.bus), consumerReady('alerts consumer', subscription), storeReady(store)]),
    async stop() {
      clearInterval(timer);
      clearInterval(heartbeat);
      await subscription.stop();
      await queue.idle();
      // Then deliveries give up at once, so a failing receiver cannot hold the stop past its limit.
      stopped = true;
      await deliveries.stop();
      // What it leaves in the outbox is taken over by another notifier at once rather than after the TTL.
      await outbox.gone();
    },
  };
}

export function notifierService(routes: RoutesFile, env: Readonly<Record<string, string | undefined>>): ServiceDefinition {
  return { name: 'notifier', start: (context) => startNotifier({ ...context, routes, env }) };
}
