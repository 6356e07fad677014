import { randomUUID } from 'node:crypto';
import type { Bus, Subscription } from '@gpualert/bus';
import { redactSecrets, type Logger } from '@gpualert/log';
import {
  forgetResolvedPages,
  NotifierCore,
  RESOLVED_PAGE_KEPT_MS,
  type Decision,
  type Notification,
  type NotifierState,
  type RoutesFile,
  type Told,
} from '@gpualert/notify';
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
import type { ClusterView, NotifierView } from './alertmanager-api.ts';
import { DeferredPages } from './cluster/deferred-pages.ts';
import { HeldGroupMessages } from './cluster/held-group-messages.ts';
import { ClusterMembership } from './cluster/membership.ts';
import { replicaStore } from './cluster/replica-store.ts';
import { SharedNotificationLog, type NotificationLogEntry } from './cluster/shared-notification-log.ts';
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
  /** A replica of a notifier cluster (Alertmanager's HA model); absent: this notifier shares the alerts' partitions with any other. */
  readonly cluster?: ClusterOptions;
}

export interface ClusterOptions {
  /** This replica's name: stable across restarts (a StatefulSet pod's name), unique in the cluster. */
  readonly replica: string;
  /** How long each position waits for the ones before it (Alertmanager's --cluster.peer-timeout, 15 s). */
  readonly peerTimeoutMs: number;
  /** Where its API answers, as /api/v2/status shows it. */
  readonly address?: string;
}

/** Under a replica's own keys: when it first started (ms since the epoch). */
const SINCE_KEY = 'cluster:since';
/** How many unreadable entries one warning line names (the count is always whole). */
const MAX_NAMED_IN_WARNING = 5;
/** Flushing done between two turns of the event loop, in ms (one group is never split). */
const FLUSH_SLICE_MS = 10;
/** How often a replica forgets the page resolves past RESOLVED_PAGE_KEPT_MS. */
const RESOLVES_FORGOTTEN_EVERY_MS = 10 * 60_000;

/** What a flush decided, and the cluster's log of each group it sent for (written with the step). */
interface Flushed {
  readonly decisions: Decision[];
  readonly logged: ReadonlyMap<string, NotificationLogEntry>;
}

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
  const { store, log, cluster } = options;
  let routes = options.routes;
  let core = new NotifierCore(routes);
  /** This run of the notifier: its outbox entries carry it, and its heartbeat key says it is alive. */
  const outbox = new Outbox(store, randomUUID().slice(0, 12), log);
  await outbox.alive();
  // A replica: its place among the live ones (its wait), the log of what the cluster sent, and the pages it holds for its wait.
  const members = cluster ? new ClusterMembership(store, cluster.replica, outbox.instance, cluster.peerTimeoutMs, log, cluster.address) : undefined;
  await members?.claim();
  await members?.beat(Date.now());
  const nflog = cluster ? new SharedNotificationLog(store) : undefined;
  const deferred = new DeferredPages();
  const heldGroups = new HeldGroupMessages();
  const pageLog = new SharedPageLog(
    store,
    routes.receivers.map((r) => r.name),
  );
  /** Each step saves what it changed; what the last step committed is what a failed one goes back to. */
  const own = cluster ? replicaStore(store, cluster.replica) : store;
  const saved = new NotifierStateStore(own, log);
  // A replica's first start, kept: what was published before it is the other replicas' (a week of
  // alerts read as news would page again faults that fired and resolved), what came after is its own.
  const since = cluster ? await firstStart(own, Date.now()) : undefined;
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
    taken: (taken) => afterTaken(taken),
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
    await resolveBehind(n);
  };

  /**
   * What a destination took: a resolve is remembered in the shared page log; a trigger that
   * reached the pager after its fault's resolve (another replica sent that from its own queue while
   * this one's waited out a retry) is followed by the resolve again, or the incident stays open.
   */
  const afterTaken = async (taken: readonly Outgoing[]) => {
    for (const { notification: n, queuedAt } of taken) {
      if (n.reason === 'page_resolve')
        await pageLog.resolvesTaken(
          n.receiver,
          n.alerts.map((a) => a.fingerprint),
          queuedAt,
        );
      if (n.reason !== 'page' || n.alerts.length === 0) continue;
      let reopened = true;
      for (const alert of n.alerts) if (!(await pageLog.reopened(n.receiver, alert.fingerprint, queuedAt))) reopened = false;
      if (reopened) await resolveBehind(n);
    }
  };

  /** The resolve of page `n`, to the outbox and queued behind it. */
  const resolveBehind = async (n: Notification) => {
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
  const flush = async (now: number): Promise<Flushed> => {
    const decisions: Decision[] = [];
    const logged = new Map<string, NotificationLogEntry>();
    // Every replica flushes a group on the same ticks, having taken the cluster's log of it first
    // (what a replica before it sent is not news); one at position p holds what it would send for
    // p × peer timeout (HeldGroupMessages).
    const wait = members?.waitMs() ?? 0;
    const due = core.dueGroups(state, now);
    if (nflog && due.length > 0) await nflog.load(state, due);
    let slice = performance.now();
    for (const key of due) {
      const before = state.groups[key];
      const dueAt = before?.nextFlush ?? now;
      const lastSent = before?.lastSent;
      const flushed = core.flushGroup(state, key, now);
      if (wait > 0) {
        decisions.push(...heldGroups.hold(key, flushed, dueAt, now, wait));
      } else {
        decisions.push(...flushed);
        // Only what this replica told goes to the cluster's log: one that told nothing must not
        // write over the entry of one that did (every replica flushes every group).
        const group = state.groups[key];
        const told = group ? group.lastSent !== lastSent : flushed.some((d) => 'send' in d);
        if (nflog && told) logged.set(key, group ? { lastSent: group.lastSent, told: group.told } : { lastSent: now, told: {} });
      }
      if (performance.now() - slice > FLUSH_SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
    core.expireSilences(state, now);
    // What this replica held is sent now if nobody before it told the same since.
    const releasable = heldGroups.dueGroups(now);
    if (nflog && releasable.length > 0) {
      const released = heldGroups.release(now, await nflog.entries(releasable));
      decisions.push(...released.decisions);
      for (const [key, entry] of released.logged) logged.set(key, entry);
    }
    return { decisions, logged };
  };

  /**
   * A replica after the first: the pages whose wait is over are sent if no replica before it paged
   * (or resolved) them since, as the shared page log says now (DeferredPages).
   */
  const pagesAfterWait = async (now: number): Promise<Decision[]> => {
    const fingerprints = deferred.dueFingerprints(now);
    if (fingerprints.length === 0) return [];
    await pageLog.load(state, fingerprints);
    return deferred.release(state, now);
  };

  /** The page log's records of these faults now, for every receiver: what a held page puts back. */
  const pagesOf = (fingerprints: readonly string[]): Map<string, Told | undefined> => {
    const out = new Map<string, Told | undefined>();
    if (!members) return out;
    for (const fp of fingerprints) for (const r of routes.receivers) out.set(`${r.name}|${fp}`, state.pages[`${r.name}|${fp}`]);
    return out;
  };

  /** Ends a step: its messages to the outbox, what it held back recorded, the state saved, then the messages queued. */
  const act = async (decisions: Decision[], fingerprints: readonly string[] = [], logged?: ReadonlyMap<string, NotificationLogEntry>) => {
    const sends = decisions.flatMap((d) => ('send' in d ? [d.send] : []));
    await outbox.put(sends);
    // In a cluster every replica decides the same suppressions: the first alone records them.
    const records = (members?.position() ?? 0) === 0;
    for (const d of decisions) {
      if ('suppressed' in d && records) {
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
    if (nflog && logged && logged.size > 0) await nflog.save(logged);
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
        const result = await work();
        deferred.settle(true);
        heldGroups.settle(true);
        return result;
      } catch (error) {
        // What this step released from the holds never reached the outbox: held again, judged again.
        deferred.settle(false);
        heldGroups.settle(false);
        // What goes back is this run's own save; should some of it not read back (past a load bound), say so rather than drop it unannounced.
        const unreadable = saved.rollback(state);
        if (unreadable.length > 0)
          log.warn({ key: STATE_KEY, unreadable: unreadable.length, examples: unreadable.slice(0, MAX_NAMED_IN_WARNING) }, 'state_rebuilt');
        throw error;
      }
    });

  /**
   * Every RESOLVES_FORGOTTEN_EVERY_MS, in a tick's step: the page resolves older than
   * RESOLVED_PAGE_KEPT_MS leave this replica's state (one pass over its pages: the faults paged or
   * resolved within the hour, each a comparison).
   */
  let resolvesForgottenAt = Date.now();
  const forgetOldResolves = async (now: number) => {
    if (now - resolvesForgottenAt < RESOLVES_FORGOTTEN_EVERY_MS) return;
    resolvesForgottenAt = now;
    // The shared log's resolves are keys Redis expires after the same hour (shared-page-log.ts).
    const forgotten = forgetResolvedPages(state, now);
    if (forgotten > 0) log.info({ forgotten }, 'page_resolves_forgotten');
  };

  /** The alerts' step: a batch of alerts decided, then what is due flushed. */
  const subscription: Subscription = await options.bus.consume({
    // A replica reads every alert, in a group of its own.
    group: options.group ?? (cluster ? `gpualert-notifier-${cluster.replica}` : 'gpualert-notifier'),
    topics: [TOPICS.alerts],
    sessionTimeoutMs: 10_000,
    handler: (batch) =>
      transact(async () => {
        state.silences = await silences.current(state);
        // What every notifier paged for these faults: another may have paged (or resolved) them before this one took their partition.
        const items = since === undefined ? batch.items : batch.items.filter((item) => item.message.timestamp >= since);
        const fingerprints = items.flatMap(({ envelope }) => (envelope.type === 'alert' ? [envelope.data.fingerprint] : []));
        await pageLog.load(state, fingerprints);
        const pagesBefore = pagesOf(fingerprints);
        const before = silences.seen(state);
        const ingested: Decision[] = [];
        const wait = members?.waitMs() ?? 0;
        for (const { envelope, message } of items) {
          if (envelope.type !== 'alert') continue;
          // A replica takes each alert as of when it was published, so that the replicas, each
          // reading at its own pace, start a group's clock (and a page's wait) at the same moment.
          const at = members ? publishedAt(message.timestamp, Date.now()) : Date.now();
          const decided = core.ingest(state, envelope, at, { partition: message.partition, offset: message.offset });
          // Held pages are not in the shared log until sent (what the log had before goes back); the
          // wait counts from now: a replica reading a backlog must not release at once what the
          // first, as far behind, has not paged yet.
          ingested.push(...(wait > 0 ? deferred.hold(state, decided, pagesBefore, Date.now(), wait) : decided));
        }
        await silences.shareOwn(state, before);
        const paged = [...ingested, ...(await pagesAfterWait(Date.now()))];
        const flushed = await flush(Date.now());
        await act([...paged, ...flushed.decisions], members ? pagedFaults(paged) : fingerprints, flushed.logged);
      }),
  });

  /** The tick's step: new silences said, what is due flushed, silences past their end expired and said. */
  await silences.start();
  const timer = setInterval(() => {
    void transact(async () => {
      state.silences = await silences.current(state);
      await silences.announceNew(state);
      const active = silences.active(state);
      const paged = await pagesAfterWait(Date.now());
      const flushed = await flush(Date.now());
      await silences.announceExpired(state, active);
      await forgetOldResolves(Date.now());
      await act([...paged, ...flushed.decisions], pagedFaults(paged), flushed.logged);
    }).catch((error: unknown) => log.error({ error: String(error) }, 'notifier_flush_failed'));
  }, options.flushEveryMs ?? 1_000);
  timer.unref();

  /** Failover: this notifier says it is alive, and sends what a dead one left in the outbox. */
  let stopped = false;
  const heartbeat = setInterval(() => {
    if (stopped) return;
    void (async () => {
      await outbox.alive();
      await members?.beat(Date.now());
      options.metrics?.clusterMembers.set(members?.peers().length ?? 1);
      options.metrics?.peerPosition.set(members?.position() ?? 0);
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
    ...(members ? { cluster: (): ClusterView => ({ name: members.replica, status: 'ready', peers: members.peers() }) } : {}),
    ready: sharedReadiness(() => [busReady(options.bus), consumerReady('alerts consumer', subscription), storeReady(store)]),
    async stop() {
      clearInterval(timer);
      clearInterval(heartbeat);
      await subscription.stop();
      await queue.idle();
      // Then deliveries give up at once, so a failing receiver cannot hold the stop past its limit.
      stopped = true;
      await deliveries.stop();
      // What it leaves in the outbox is taken over by another notifier at once rather than after the TTL; the next replica moves up.
      await outbox.gone();
      await members?.leave().catch(() => undefined);
    },
  };
}

export function notifierService(routes: RoutesFile, env: Readonly<Record<string, string | undefined>>): ServiceDefinition {
  return { name: 'notifier', start: (context) => startNotifier({ ...context, routes, env }) };
}

/** When this replica first started, as its own keys remember it (set once, at its first start). */
async function firstStart(own: StateStore, now: number): Promise<number> {
  await own.compareAndSet(SINCE_KEY, null, String(now));
  const text = await own.get(SINCE_KEY);
  const since = Number(text);
  return text !== null && Number.isFinite(since) ? since : now;
}

/**
 * The faults whose page a step sent (or resolved). A replica writes the shared page log for these
 * alone: every replica reads every alert, and one that wrote what it merely saw would write over
 * what the replica that paged recorded (a resolve then finds no page to resolve).
 */
function pagedFaults(decisions: readonly Decision[]): string[] {
  const out: string[] = [];
  for (const d of decisions) {
    if (!('send' in d) || (d.send.reason !== 'page' && d.send.reason !== 'page_resolve')) continue;
    for (const alert of d.send.alerts) out.push(alert.fingerprint);
  }
  return out;
}

/** How far back a replica dates an alert it reads late: past this, it counts from now (a replica catching up a long lag). */
const MAX_DATED_BACK_MS = 60_000;

/** When an alert was published, as a replica dates it: never in the future, never more than a minute back. */
function publishedAt(timestamp: number, now: number): number {
  return Number.isFinite(timestamp) ? Math.min(now, Math.max(timestamp, now - MAX_DATED_BACK_MS)) : now;
}
