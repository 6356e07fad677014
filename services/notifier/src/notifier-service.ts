import { envelopeMessage, type Bus, type Subscription } from '@gpualert/bus';
import { redactSecrets, type Logger } from '@gpualert/log';
import {
  createChannel, dict, rateLimitOf, NotifierCore, type Channel, type Decision, type Notification,
  type NotifierState, type RoutesFile, type Silence,
} from '@gpualert/notify';
import { serialQueue, type RunningService, type ServiceDefinition } from '@gpualert/runtime';
import { DEADLETTER_HEADERS } from '@gpualert/bus';
import { newEnvelope, TOPICS, type NotificationData } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { DEFAULT_RETRY, deliver, digest, RateLimiter, sleep, type RetryPolicy } from './delivery.ts';
import type { NotifierView } from './alertmanager-api.ts';
import type { NotifierMetrics } from './notifier-http.ts';
import { encodeSilence, SILENCES_KEY, loadSilences } from './silences.ts';
import { randomUUID } from 'node:crypto';
import { SharedPageLog } from './shared-page-log.ts';
import { NotifierStateStore, STATE_KEY } from './notifier-state-store.ts';
import { ReceiverQueues } from './receiver-queues.ts';
import { NOTIFIER_HEARTBEAT_MS, Outbox, type Outgoing } from './outbox.ts';

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

const SOURCE = 'notifier/0.1.0';
/** How many unreadable entries one warning line names (the count is always whole). */
const MAX_NAMED_IN_WARNING = 5;
/** Flushing done between two turns of the event loop, in ms (one group is never split). */
const FLUSH_SLICE_MS = 10;

/**
 * The notifier as a service. Decisions come from the pure core; each message to send is written
 * to an outbox in the store before the alert's offset is committed, and leaves it only once the
 * destination took it (or it was dead-lettered), so a restart resends what was in flight and
 * loses nothing; pages carry the fingerprint as dedup key, so a resend is not a second page.
 */
/** The running notifier: stop it, or read its routes and state (as last saved) for the API. */
export interface RunningNotifier extends RunningService, NotifierView {}

export async function startNotifier(options: NotifierOptions): Promise<RunningNotifier> {
  const core = new NotifierCore(options.routes);
  /** This run of the notifier: its outbox entries carry it, and its heartbeat key says it is alive. */
  const outbox = new Outbox(options.store, randomUUID().slice(0, 12), options.log);
  await outbox.alive();
  const pageLog = new SharedPageLog(options.store, options.routes.receivers.map((r) => r.name));
  /** Each step saves what it changed; what the last step committed is what a failed one goes back to. */
  const saved = new NotifierStateStore(options.store, options.log);
  const state: NotifierState = await saved.load();
  const seeded = await pageLog.seed(state);
  if (seeded > 0) options.log.info({ faults: seeded }, 'page_log_seeded');
  const channels = new Map<string, Channel>();
  const buckets = new Map<string, RateLimiter>();
  /** Receivers whose last attempt failed: warned about once until one gets through. */
  const failing = new Set<string>();
  let stopped = false;
  /** Aborted on stop: ends every backoff, rate-limit wait and in-flight send at once (the outbox keeps what is unsent). */
  const stopping = new AbortController();
  for (const receiver of options.routes.receivers) {
    channels.set(receiver.name, createChannel(receiver, options.env));
    const limit = rateLimitOf(receiver);
    if (limit) buckets.set(receiver.name, new RateLimiter(limit));
  }
  const channelOf = (receiver: string) => options.routes.receivers.find((r) => r.name === receiver)?.channel ?? 'record';
  /** An outbox entry queued for a receiver the routes no longer have (renamed, removed): a permanent failure, dead-lettered with why. */
  const goneReceiver = (receiver: string): Channel => ({
    name: 'record',
    send: () => Promise.resolve({ ok: false, retriable: false, error: `receiver ${JSON.stringify(receiver.slice(0, 200))} is not in the routes (renamed or removed since this was queued)` }),
  });

  const record = async (data: NotificationData, host: string) => {
    options.metrics?.notifications.inc({ receiver: data.receiver, outcome: data.outcome });
    await options.bus.publish(TOPICS.notifications, [envelopeMessage(newEnvelope({ type: 'notification', host, source: SOURCE, data }))]);
  };

  /** Sends what waits for one receiver, in order, until none is left or the notifier stops. */
  const send = async (receiver: string, queue: Outgoing[]): Promise<void> => {
    while (queue.length > 0 && !stopped) {
      const bucket = buckets.get(receiver);
      if (bucket && !bucket.take(Date.now())) {
        await sleep(bucket.waitMs(), stopping.signal);
        continue;
      }
      // Over the destination's rate, what waits is folded into one digest rather than dropped.
      const batch = bucket && queue.length > 1 && bucket.waitMs() > 0 ? queue.splice(0) : queue.splice(0, 1);
      const notification = batch.length > 1 ? digest(batch.map((b) => b.notification)) : batch[0]!.notification;
      const host = notification.alerts[0]?.host ?? 'notifier';
      const fingerprints = notification.alerts.map((a) => a.fingerprint);
      const result = await deliver(channels.get(receiver) ?? goneReceiver(receiver), notification, options.retry ?? DEFAULT_RETRY, async ({ attempt, result: r }) => {
        // One warning when a receiver starts failing and one line when it is back: a person sees
        // that pages are not getting through without a line per retry.
        if (!r.ok && !failing.has(receiver)) {
          failing.add(receiver);
          options.log.warn({ receiver, attempt, error: redactSecrets(r.error) }, 'receiver_failing');
        } else if (r.ok && failing.delete(receiver)) {
          options.log.info({ receiver, attempt }, 'receiver_recovered');
        }
        await record({
          receiver, channel: channelOf(receiver), fingerprints, reason: batch.length > 1 ? `digest:${notification.reason}` : notification.reason,
          outcome: r.ok ? 'sent' : 'failed', attempt, ...(r.ok ? {} : { error: redactSecrets(r.error) }),
        }, host).catch((error: unknown) => options.log.error({ error: redactSecrets(String(error)) }, 'notification_record_failed'));
      }, () => stopped, Math.random, stopping.signal);
      if (stopped && !result.ok) return; // stays in the outbox for the next start
      if (!result.ok) {
        const error = redactSecrets(result.error);
        options.log.error({ receiver, fingerprints, error }, 'notification_dead_lettered');
        options.metrics?.notifications.inc({ receiver, outcome: 'dead_lettered' });
        await options.bus.publish(TOPICS.deadletter, [{
          key: host, value: JSON.stringify(notification),
          headers: { [DEADLETTER_HEADERS.reason]: `delivery to ${receiver} failed: ${error}`, [DEADLETTER_HEADERS.topic]: TOPICS.notifications },
        }]);
      }
      await outbox.remove(batch.map((b) => b.notification.id));
    }
  };
  // Nothing a channel does may reject a runner: it is not awaited where it starts.
  const outgoing = new ReceiverQueues<Outgoing>(send, (receiver, error) => options.log.error({ receiver, error: redactSecrets(String(error)) }, 'notification_drain_failed'), () => stopped);

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
      ...n, id: `${n.id}:resolve`, reason: 'page_resolve', alerts, firing: 0,
      ...(n.alertmanager ? { alertmanager: { ...n.alertmanager, alerts } } : {}),
    };
    const queuedAt = Date.now();
    await outbox.put([resolve], queuedAt);
    options.log.info({ id: resolve.id, receiver: resolve.receiver }, 'outbox_resolve_requeued');
    enqueue(resolve, queuedAt);
  };

  const enqueue = (notification: Notification, queuedAt: number) => {
    outgoing.push(notification.receiver, { notification, queuedAt }, (q) => q.notification.id === notification.id);
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

  const act = async (decisions: Decision[], fingerprints: readonly string[] = []) => {
    const sends = decisions.flatMap((d) => ('send' in d ? [d.send] : []));
    await outbox.put(sends);
    for (const d of decisions) {
      if ('suppressed' in d) {
        await record({ receiver: d.suppressed.receiver, channel: channelOf(d.suppressed.receiver), fingerprints: [...d.suppressed.fingerprints], reason: `${d.suppressed.reason}: ${d.suppressed.detail}`, outcome: 'suppressed', attempt: 0 }, 'notifier');
      }
    }
    await saved.save(state);
    // Last: should it fail, the step is decided again from the shared log, and its sends (same ids) queued then.
    await pageLog.save(state, fingerprints);
    for (const n of sends) enqueue(n, Date.now());
  };

  // Whatever was in flight when the last run stopped goes out first.
  for (const pending of await outbox.load()) {
    options.log.info({ id: pending.notification.id, receiver: pending.notification.receiver }, 'outbox_resend');
    enqueue(pending.notification, pending.queuedAt);
    await resolveIfOver(pending);
  }

  /**
   * The silences in the store, which the CLI and the API write. One this notifier holds that is
   * still active but gone from the store was lost with the store's data (nothing deletes a
   * silence: expiring one marks it), and is written back rather than forgotten mid-maintenance.
   */
  const currentSilences = async (): Promise<Record<string, Silence>> => {
    const stored = await loadSilences(options.store);
    const now = Date.now();
    const lost = Object.values(state.silences).filter((s) => !Object.hasOwn(stored, s.id) && s.expiredAt === undefined && s.endsAt > now);
    if (lost.length > 0) {
      await options.store.hashSet(SILENCES_KEY, Object.fromEntries(lost.map((s) => [s.id, encodeSilence(s)])));
      options.log.warn({ silences: lost.map((s) => s.id) }, 'silences_restored_to_store');
      // Copies: what the last step committed is not changed by this one (notifier-state-store.ts).
      for (const silence of lost) stored[silence.id] = { ...silence };
    }
    return stored;
  };

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
        if (unreadable.length > 0) options.log.warn({ key: STATE_KEY, unreadable: unreadable.length, examples: unreadable.slice(0, MAX_NAMED_IN_WARNING) }, 'state_rebuilt');
        throw error;
      }
    });
  const subscription: Subscription = await options.bus.consume({
    group: options.group ?? 'gpualert-notifier',
    topics: [TOPICS.alerts],
    sessionTimeoutMs: 10_000,
    handler: (batch) =>
      transact(async () => {
        state.silences = await currentSilences();
        // What every notifier paged for these faults: another may have paged (or resolved) them before this one took their partition.
        const fingerprints = batch.items.flatMap(({ envelope }) => (envelope.type === 'alert' ? [envelope.data.fingerprint] : []));
        await pageLog.load(state, fingerprints);
        const stored = new Map(Object.values(state.silences).map((s) => [s.id, [s, s.endsAt, s.expiredAt] as const]));
        const decisions: Decision[] = [];
        for (const { envelope } of batch.items) {
          if (envelope.type === 'alert') decisions.push(...core.ingest(state, envelope, Date.now()));
        }
        // Maintenance windows' own silences, made or expired by the core, are shared like any other:
        // those it made or expired in this step (the others are as the store just gave them).
        const own = Object.values(state.silences).filter((s) => {
          const was = stored.get(s.id);
          return s.createdBy === 'gpualert' && (was?.[0] !== s || was[1] !== s.endsAt || was[2] !== s.expiredAt);
        });
        if (own.length > 0) await options.store.hashSet(SILENCES_KEY, dict(own.map((s) => [s.id, encodeSilence(s)] as const)));
        decisions.push(...await flush(Date.now()));
        await act(decisions, fingerprints);
      }),
  });
  // Silences made from the CLI or the API show on gpualert.notifications, for the timeline.
  const knownSilences = new Set(Object.keys(await loadSilences(options.store, options.log)));
  const timer = setInterval(() => {
    void transact(async () => {
      state.silences = await currentSilences();
      for (const silence of Object.values(state.silences)) {
        if (knownSilences.has(silence.id)) continue;
        knownSilences.add(silence.id);
        await record({
          receiver: silence.receivers?.join(',') ?? '*', channel: 'silence', fingerprints: [],
          reason: `silence ${silence.id} created by ${silence.createdBy} until ${new Date(silence.endsAt).toISOString()} for ${silence.matchers.join(' ')}: ${silence.comment}`,
          outcome: 'suppressed', attempt: 0,
        }, 'notifier');
      }
      const before = new Set(Object.keys(state.silences).filter((id) => state.silences[id]!.expiredAt === undefined));
      const decisions = await flush(Date.now());
      for (const id of before) {
        const silence = state.silences[id]!;
        if (silence.expiredAt !== undefined) {
          await options.store.hashSet(SILENCES_KEY, { [id]: encodeSilence(silence) });
          await record({ receiver: '*', channel: 'silence', fingerprints: [], reason: `silence ${id} expired (${silence.comment})`, outcome: 'suppressed', attempt: 0 }, 'notifier');
        }
      }
      await act(decisions);
    }).catch((error: unknown) => options.log.error({ error: String(error) }, 'notifier_flush_failed'));
  }, options.flushEveryMs ?? 1_000);
  timer.unref();
  /** Failover: this notifier says it is alive, and sends what a dead one left in the outbox. */
  const adoptOrphans = async () => {
    await outbox.alive();
    for (const adopted of await outbox.orphans()) {
      enqueue(adopted.notification, adopted.queuedAt);
      await resolveIfOver(adopted);
    }
  };
  const heartbeat = setInterval(() => {
    if (!stopped) adoptOrphans().catch((error: unknown) => options.log.error({ error: redactSecrets(String(error)) }, 'notifier_heartbeat_failed'));
  }, NOTIFIER_HEARTBEAT_MS);
  heartbeat.unref();
  options.log.info({ receivers: [...channels.keys()], instance: outbox.instance }, 'notifier_started');

  return {
    name: 'notifier',
    routes: options.routes,
    // The API reads the state as the last step saved it: never half a step, never a step rolled back.
    state: () => saved.snapshot(),
    async stop() {
      clearInterval(timer);
      clearInterval(heartbeat);
      await subscription.stop();
      await queue.idle();
      // Then deliveries give up at once (backoffs, rate waits and sends abort; the outbox keeps
      // what is unsent), so a failing receiver cannot hold the stop past its limit.
      stopped = true;
      stopping.abort();
      await outgoing.idle();
      // What it leaves in the outbox is taken over by another notifier at once rather than after the TTL.
      await outbox.gone();
    },
  };
}

export function notifierService(routes: RoutesFile, env: Readonly<Record<string, string | undefined>>): ServiceDefinition {
  return { name: 'notifier', start: (context) => startNotifier({ ...context, routes, env }) };
}

