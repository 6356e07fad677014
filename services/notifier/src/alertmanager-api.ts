import type { Readiness } from '@gpualert/runtime';
import { createHash } from 'node:crypto';
import { envelopeMessage, type Bus } from '@gpualert/bus';
import {
  ALERTMANAGER_API_SOURCE,
  formatMatcher,
  matchesAll,
  matchesValue,
  newMatcher,
  NotifierCore,
  parseMatchers,
  routesFor,
  type AlertAbout,
  type AlertMarkers,
  type Dict,
  type Matcher,
  type MatchOp,
  type NotifierState,
  type ResolvedRoute,
  type RoutesFile,
  type Silence,
} from '@gpualert/notify';
import { Envelope, newEnvelope, stableId, TOPICS, type EnvelopeOf, type Severity } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';
import { firstIssue } from './first-issue.ts';
import { makeSilence } from './silence-guard.ts';
import { canUpdateInPlace, expireSilence, loadSilences, readSilence, SilenceError, updateSilence } from './silences.ts';

/**
 * Alertmanager's v2 HTTP API (api/v2/openapi.yaml) over gpualert's own pieces: alerts pushed by
 * Prometheus, vmalert or Grafana become alert envelopes on the alerts topic (so they are routed,
 * grouped, inhibited, silenced and paged like the engine's); silences are the notifier's silences.
 */

/** Alerts in one POST: Prometheus sends batches of 64 by default (max 256 per `alertmanager_config`); 1,000 leaves room and bounds one request's work. */
export const MAX_ALERTS_PER_POST = 1_000;
/** A POST of alerts: 1,000 alerts with their labels and annotations fit in 4 MiB; a larger body is refused unread. */
export const MAX_ALERTS_BODY_BYTES = 4 * 1024 * 1024;

const LabelSet = z.record(z.string(), z.string());
export const PostableAlert = z.object({
  labels: LabelSet,
  annotations: LabelSet.optional(),
  startsAt: z.string().optional(),
  endsAt: z.string().optional(),
  generatorURL: z.string().optional(),
});
export type PostableAlert = z.infer<typeof PostableAlert>;

/** A pushed alert's `severity` label onto ours; a Map, so `constructor` or `__proto__` is just unknown (warning). */
const SEVERITY: ReadonlyMap<string, Severity> = new Map<string, Severity>([
  ['critical', 'critical'],
  ['page', 'critical'],
  ['error', 'error'],
  ['major', 'error'],
  ['warning', 'warning'],
  ['warn', 'warning'],
  ['minor', 'warning'],
  ['info', 'info'],
  ['none', 'info'],
  ['informational', 'info'],
]);

/** Alertmanager's fingerprint idea: the sorted label set, hashed. */
export function labelsFingerprint(labels: Readonly<Record<string, string>>): string {
  const text = Object.keys(labels)
    .sort()
    .map((k) => `${k}\u0000${labels[k]}`)
    .join('\u0001');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** Go's zero time.Time, 0001-01-01T00:00:00Z: what a Go client sends for a time it leaves unset. */
const GO_ZERO_TIME = Date.parse('0001-01-01T00:00:00Z');

/** One pushed alert as an envelope, or one line saying why not. `endsAt` at or before now resolves it. */
export function alertEnvelope(alert: PostableAlert, now: number): EnvelopeOf<'alert'> | string {
  const labels = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(alert.labels)) labels[k] = v;
  if (Object.keys(labels).length === 0) return 'an alert needs at least one label';
  const given = alert.startsAt ? Date.parse(alert.startsAt) : GO_ZERO_TIME;
  const ends = alert.endsAt ? Date.parse(alert.endsAt) : Number.NaN;
  if (alert.startsAt && Number.isNaN(given)) return `startsAt ${JSON.stringify(alert.startsAt.slice(0, 40))} is not a date`;
  if (alert.endsAt && Number.isNaN(ends) && !alert.endsAt.startsWith('0001-01-01')) return `endsAt ${JSON.stringify(alert.endsAt.slice(0, 40))} is not a date`;
  const endsGiven = !Number.isNaN(ends) && ends > GO_ZERO_TIME;
  // No start, or Go's zero time (what `amtool alert add` sends): the end when one is given, else now (api/v2/api.go).
  const starts = given > GO_ZERO_TIME ? given : endsGiven ? ends : now;
  const resolved = endsGiven && ends <= now;
  const fingerprint = `am-${labelsFingerprint(labels)}`;
  const annotations = alert.annotations ?? {};
  const instance = labels.instance ?? '';
  const ownHost = Object.hasOwn(labels, 'host') ? labels.host : undefined;
  const host = (ownHost ?? instance.replace(/:\d+$/, '')) || labels.job || ALERTMANAGER_API_SOURCE;
  const name = labels.alertname ?? 'alert';
  const envelope = {
    type: 'alert' as const,
    id: stableId('am-alert', fingerprint, resolved ? 'resolved' : 'firing', resolved ? ends : starts),
    host: host.slice(0, 253),
    source: ALERTMANAGER_API_SOURCE,
    labels,
    data: {
      fingerprint,
      status: resolved ? ('resolved' as const) : ('firing' as const),
      severity: SEVERITY.get((labels.severity ?? '').toLowerCase()) ?? 'warning',
      category: 'other' as const,
      rule: name,
      summary: annotations.summary ?? annotations.description ?? name,
      ...(annotations.description ? { description: annotations.description } : {}),
      // Every annotation as sent (runbook_url, dashboard…), none when none was: webhooks, templates and GET /api/v2/alerts show them as they came.
      annotations,
      starts_at: new Date(starts).toISOString(),
      ...(resolved ? { ends_at: new Date(ends).toISOString() } : {}),
      evidence: alert.generatorURL ? [alert.generatorURL.slice(0, 2048)] : [],
    },
  };
  const checked = Envelope.safeParse(newEnvelope(envelope));
  if (!checked.success) return firstIssue(checked.error);
  if (checked.data.type !== 'alert') return 'type: expected an alert';
  return checked.data;
}

/** `POST /api/v2/alerts`: every alert checked first; one bad alert refuses the batch (400), as Alertmanager does. */
export async function postAlerts(bus: Bus, body: unknown, now: number): Promise<{ status: number; body: unknown }> {
  const list = z.array(PostableAlert).max(MAX_ALERTS_PER_POST).safeParse(body);
  if (!list.success) return { status: 400, body: { code: 400, message: firstIssue(list.error, 'body') } };
  const envelopes: EnvelopeOf<'alert'>[] = [];
  for (const [i, alert] of list.data.entries()) {
    const envelope = alertEnvelope(alert, now);
    if (typeof envelope === 'string') return { status: 400, body: { code: 400, message: `alert ${i}: ${envelope}` } };
    envelopes.push(envelope);
  }
  if (envelopes.length > 0) await bus.publish(TOPICS.alerts, envelopes.map(envelopeMessage));
  return { status: 200, body: '' };
}

const ApiMatcher = z.object({ name: z.string().min(1), value: z.string(), isRegex: z.boolean(), isEqual: z.boolean().default(true) });
const PostableSilence = z.object({
  id: z.string().optional(),
  matchers: z.array(ApiMatcher).min(1, 'a silence needs at least one matcher'),
  startsAt: z.string(),
  endsAt: z.string(),
  createdBy: z.string(),
  comment: z.string(),
  /** gpualert's own: make a silence that reaches more than half of what is firing, across hosts (silence-guard.ts). */
  force: z.boolean().optional(),
});

function apiMatchers(texts: readonly string[]) {
  return texts.flatMap((t) => {
    const parsed = parseMatchers(t);
    return typeof parsed === 'string'
      ? []
      : parsed.map((m) => ({ name: m.label, value: m.value, isRegex: m.op === '=~' || m.op === '!~', isEqual: m.op === '=' || m.op === '=~' }));
  });
}

/** A silence as Alertmanager's API shows it (GettableSilence). */
export function gettableSilence(s: Silence, now: number) {
  const state = s.expiredAt !== undefined || s.endsAt <= now ? 'expired' : s.startsAt > now ? 'pending' : 'active';
  return {
    id: s.id,
    status: { state },
    updatedAt: new Date(s.expiredAt ?? s.startsAt).toISOString(),
    matchers: apiMatchers(s.matchers),
    startsAt: new Date(s.startsAt).toISOString(),
    endsAt: new Date(s.endsAt).toISOString(),
    createdBy: s.createdBy,
    comment: s.comment,
    // gpualert's own, beside Alertmanager's fields (its clients ignore a field they do not know): a silence for these receivers only.
    ...(s.receivers ? { receivers: s.receivers.map((name) => ({ name })) } : {}),
  };
}

export async function listSilences(store: StateStore, filter: readonly string[], now: number): Promise<{ status: number; body: unknown }> {
  const all: Dict<Silence> = await loadSilences(store);
  const wanted = filter.flatMap((f) => {
    const parsed = parseMatchers(f);
    return typeof parsed === 'string' ? [] : parsed.map(formatMatcher);
  });
  const out = Object.values(all)
    .filter((s) =>
      wanted.every((w) =>
        s.matchers
          .flatMap((t) => {
            const p = parseMatchers(t);
            return typeof p === 'string' ? [] : p.map(formatMatcher);
          })
          .includes(w),
      ),
    )
    .map((s) => gettableSilence(s, now));
  return { status: 200, body: out };
}

/**
 * `POST /api/v2/silences`: a new silence; with an id, that silence changed in place where
 * Alertmanager would (the same matchers, an active one's start kept), else expired and replaced.
 */
export async function postSilence(store: StateStore, body: unknown, now: number): Promise<{ status: number; body: unknown }> {
  const parsed = PostableSilence.safeParse(body);
  if (!parsed.success) return { status: 400, body: firstIssue(parsed.error, 'body') };
  const b = parsed.data;
  const matchers: string[] = [];
  for (const m of b.matchers) {
    const op: MatchOp = m.isRegex ? (m.isEqual ? '=~' : '!~') : m.isEqual ? '=' : '!=';
    const matcher = newMatcher(m.name, op, m.value);
    if (typeof matcher === 'string') return { status: 400, body: `matcher ${m.name}: ${matcher}` };
    matchers.push(formatMatcher(matcher));
  }
  const askedStart = Date.parse(b.startsAt);
  const endsAt = Date.parse(b.endsAt);
  if (Number.isNaN(askedStart) || Number.isNaN(endsAt)) return { status: 400, body: 'startsAt and endsAt must be RFC 3339 times' };
  try {
    // `amtool silence update` of a silence Alertmanager may change in place keeps its id there: here too.
    const existing = b.id ? await readSilence(store, b.id) : undefined;
    if (existing && canUpdateInPlace(existing, { matchers, startsAt: askedStart, endsAt }, now)) {
      const updated = await updateSilence(
        store,
        existing,
        { matchers, durationMs: endsAt - askedStart, startsAt: askedStart, createdBy: b.createdBy, comment: b.comment },
        now,
      );
      return { status: 200, body: { silenceID: updated.id } };
    }
    const startsAt = Math.max(askedStart, now);
    if (endsAt <= startsAt) return { status: 400, body: 'end time must not be before start time, nor in the past' };
    const { silence } = await makeSilence(
      store,
      { matchers, durationMs: endsAt - startsAt, startsAt, createdBy: b.createdBy, comment: b.comment },
      now,
      b.force === true,
    );
    if (b.id) await expireSilence(store, b.id, now);
    return { status: 200, body: { silenceID: silence.id } };
  } catch (error) {
    if (error instanceof SilenceError) return { status: 400, body: error.message };
    throw error;
  }
}

export async function getSilence(store: StateStore, id: string, now: number): Promise<{ status: number; body: unknown }> {
  const silence = (await loadSilences(store))[id];
  return silence ? { status: 200, body: gettableSilence(silence, now) } : { status: 404, body: `silence ${id} not found` };
}

export async function deleteSilence(store: StateStore, id: string, now: number): Promise<{ status: number; body: unknown }> {
  const silence = await expireSilence(store, id, now);
  return silence ? { status: 200, body: '' } : { status: 404, body: `silence ${id} not found` };
}

const STARTED = Date.now();
/** What `/api/v2/status` says of the cluster, as Alertmanager's ClusterStatus: this replica's name, `ready`, and the live peers. */
export interface ClusterView {
  readonly name: string;
  readonly status: 'ready' | 'settling' | 'disabled';
  readonly peers: readonly { readonly name: string; readonly address: string }[];
}

/** `GET /api/v2/status`: the cluster (disabled for a notifier run alone), the version and the routes file as loaded. */
export function status(routes: RoutesFile | undefined, version: string, cluster?: ClusterView) {
  return {
    cluster: cluster ?? { status: 'disabled', peers: [], name: 'gpualert' },
    versionInfo: { version, revision: '', branch: '', buildUser: '', buildDate: '', goVersion: `gpualert on node ${process.version}` },
    // The file as written: amtool's `config routes` parses it. Secrets in it are `env:` references, never values.
    config: { original: routes?.original ?? '' },
    uptime: new Date(STARTED).toISOString(),
  };
}

export function receivers(routes: RoutesFile | undefined) {
  return Object.keys(routes?.integrations ?? {}).map((name) => ({ name }));
}

export { ALERTMANAGER_API_SOURCE };

/** The running notifier as the API may see it: its routes and its state as last saved (a consistent snapshot, never mid-step). */
export interface NotifierView {
  readonly routes: RoutesFile;
  state(): Readonly<NotifierState>;
  /** Whether the notifier can do its work now (`/readyz`, `/-/ready`); absent: ready when it answers. */
  ready?(): Promise<Readiness>;
  /** The cluster this notifier is a replica of; absent: it runs alone. */
  cluster?(): ClusterView;
}

/** `GET /api/v2/alerts` and `/alerts/groups` filters: the state flags (all true unless said), label matchers, a receiver regex. */
export interface AlertQuery {
  readonly active: boolean;
  readonly silenced: boolean;
  readonly inhibited: boolean;
  readonly unprocessed: boolean;
  readonly filter: readonly Matcher[];
  readonly receiver?: Matcher;
}

/** The query string as Alertmanager reads it, or one line naming the bad parameter (a 400). */
export function alertQuery(params: URLSearchParams): AlertQuery | string {
  const flag = (name: string): boolean | string => {
    const value = params.get(name);
    if (value === null || value === '') return true;
    if (value === 'true' || value === 'false') return value === 'true';
    return `${name} must be true or false (got ${JSON.stringify(value.slice(0, 40))})`;
  };
  const active = flag('active');
  if (typeof active === 'string') return active;
  const silenced = flag('silenced');
  if (typeof silenced === 'string') return silenced;
  const inhibited = flag('inhibited');
  if (typeof inhibited === 'string') return inhibited;
  const unprocessed = flag('unprocessed');
  if (typeof unprocessed === 'string') return unprocessed;
  const filter: Matcher[] = [];
  for (const text of params.getAll('filter')) {
    const parsed = parseMatchers(text);
    if (typeof parsed === 'string') return `filter ${JSON.stringify(text.slice(0, 80))}: ${parsed}`;
    filter.push(...parsed);
  }
  const wanted = params.get('receiver');
  const receiver = wanted ? newMatcher('receiver', '=~', wanted) : undefined;
  if (typeof receiver === 'string') return `receiver: ${receiver}`;
  return { active, silenced, inhibited, unprocessed, filter, ...(receiver ? { receiver } : {}) };
}

type GettableAlert = ReturnType<typeof gettableAlert>;

/** What a GettableAlert shows that changes only when the alert is pushed again: built once per push, then reused. */
function alertBase(fingerprint: string, labels: Readonly<Record<string, string>>, about: AlertAbout | undefined, receivers: readonly string[], now: number) {
  const annotations: [string, string][] = about?.annotations
    ? Object.entries(about.annotations)
    : [
        ...(about?.summary ? [['summary', about.summary] as [string, string]] : []),
        ...(about?.description ? [['description', about.description] as [string, string]] : []),
      ];
  return {
    // Object.fromEntries makes plain objects whose `__proto__` or `constructor` key is only data.
    labels: Object.fromEntries(Object.entries(labels)),
    annotations: Object.fromEntries(annotations),
    receivers: receivers.map((name) => ({ name })),
    fingerprint,
    startsAt: about?.startsAt ?? new Date(now).toISOString(),
    updatedAt: new Date(about?.updatedAt ?? now).toISOString(),
    // Firing until told otherwise: Alertmanager shows the time it would resolve the alert by itself; gpualert waits for the source.
    endsAt: '0001-01-01T00:00:00.000Z',
    generatorURL: about?.evidence?.find((e) => /^https?:\/\//.test(e)) ?? '',
  };
}

/**
 * Alertmanager's rule: an alert is `suppressed` when anything silences or inhibits it. A silence
 * for some receivers only (a maintenance window's, for the pager) counts when the alert goes to
 * one of them: it is held from the pager, so it is listed suppressed with that silence, though
 * chat still hears of it (the silence's `receivers` says so).
 */
function gettableAlert(base: ReturnType<typeof alertBase>, markers: AlertMarkers) {
  const suppressed = markers.silencedBy.length > 0 || markers.inhibitedBy.length > 0;
  return {
    ...base,
    status: { state: suppressed ? ('suppressed' as const) : ('active' as const), silencedBy: markers.silencedBy, inhibitedBy: markers.inhibitedBy },
  };
}

function wantedByState(alert: GettableAlert, q: AlertQuery): boolean {
  const { silencedBy, inhibitedBy, state } = alert.status;
  if (!q.active && state === 'active') return false;
  if (!q.silenced && silencedBy.length > 0) return false;
  if (!q.inhibited && inhibitedBy.length > 0) return false;
  return true;
}

/**
 * The most alerts one `GET /api/v2/alerts` (or `/alerts/groups`) answers with, the first by
 * fingerprint: 10,000 alerts are about 10 MB of JSON, and a fleet with more firing at once narrows
 * with `filter` or `receiver` (amtool's `alert query` does). Alertmanager itself has no bound.
 */
export const MAX_ALERTS_PER_RESPONSE = 10_000;

interface RouteEntry {
  readonly labels: Readonly<Record<string, string>>;
  readonly routes: readonly ResolvedRoute[];
  readonly receivers: readonly string[];
  /** The alert as shown, for the push it was built from (`about.updatedAt`). */
  base?: ReturnType<typeof alertBase>;
  baseAt?: number | undefined;
  /** Each route's group (key and labels) for `/alerts/groups`, built on first use. */
  groups?: readonly { readonly route: ResolvedRoute; readonly key: string; readonly labels: Record<string, string> }[];
}

/** The routes each firing alert takes, per loaded routes file: a reload is a new file, so a new cache. */
const routeCaches = new WeakMap<RoutesFile, Map<string, RouteEntry>>();

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  let n = 0;
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue;
    n += 1;
    if (!Object.hasOwn(b, k) || a[k] !== b[k]) return false;
  }
  return n === Object.keys(b).length;
}

/** An alert's routes, computed once per (routes file, fingerprint, label set); what stopped firing is dropped. */
function routesOf(routes: RoutesFile, cache: Map<string, RouteEntry>, fingerprint: string, labels: Readonly<Record<string, string>>): RouteEntry {
  const hit = cache.get(fingerprint);
  if (hit && sameLabels(hit.labels, labels)) return hit;
  const resolved = routesFor(routes.route, labels);
  const entry: RouteEntry = { labels, routes: resolved, receivers: [...new Set(resolved.map((r) => r.receiver))] };
  cache.set(fingerprint, entry);
  return entry;
}

/**
 * The firing alerts a query wants, in fingerprint order, at most MAX_ALERTS_PER_RESPONSE: label
 * matchers first (cheap), then the routes (cached), the receiver regex, and last the silences
 * and inhibitions that decide the state filters. `omitted` counts what the bound left out.
 */
function firingAlerts(view: NotifierView, core: NotifierCore, q: AlertQuery, now: number) {
  const state = view.state();
  let cache = routeCaches.get(view.routes);
  if (!cache) routeCaches.set(view.routes, (cache = new Map()));
  const out: { entry: RouteEntry; alert: GettableAlert }[] = [];
  let omitted = 0;
  const wantedReceiver = q.receiver;
  for (const fingerprint of Object.keys(state.firing).sort()) {
    const labels = state.firing[fingerprint];
    if (!labels || !matchesAll(q.filter, labels)) continue;
    const entry = routesOf(view.routes, cache, fingerprint, labels);
    const { receivers } = entry;
    if (wantedReceiver && !receivers.some((r) => matchesValue(wantedReceiver, r))) continue;
    const about = state.about?.[fingerprint];
    if (!entry.base || entry.baseAt !== about?.updatedAt) {
      entry.base = alertBase(fingerprint, labels, about, receivers, now);
      entry.baseAt = about?.updatedAt;
    }
    const alert = gettableAlert(entry.base, core.markers(state, fingerprint, labels, now, receivers));
    if (!wantedByState(alert, q)) continue;
    if (out.length >= MAX_ALERTS_PER_RESPONSE) omitted += 1;
    else out.push({ entry, alert });
  }
  // Bounded: alerts that stopped firing (or a label set that changed) leave the cache.
  if (cache.size > Object.keys(state.firing).length * 2 + 1_000) {
    for (const fingerprint of cache.keys()) if (!Object.hasOwn(state.firing, fingerprint)) cache.delete(fingerprint);
  }
  return { alerts: out, omitted };
}

const cores = new WeakMap<RoutesFile, NotifierCore>();
function coreOf(routes: RoutesFile): NotifierCore {
  let core = cores.get(routes);
  if (!core) cores.set(routes, (core = new NotifierCore(routes)));
  return core;
}

/** `GET /api/v2/alerts`: the firing alerts in Alertmanager's GettableAlert shape, filtered as amtool asks, in fingerprint order, at most MAX_ALERTS_PER_RESPONSE. */
export function listAlerts(view: NotifierView, q: AlertQuery, now: number): GettableAlert[] {
  return firingAlerts(view, coreOf(view.routes), q, now).alerts.map(({ alert }) => alert);
}

/** The same, with how many alerts the bound left out (for a header or a log line). */
export function listAlertsBounded(view: NotifierView, q: AlertQuery, now: number): { alerts: GettableAlert[]; omitted: number } {
  const { alerts, omitted } = firingAlerts(view, coreOf(view.routes), q, now);
  return { alerts: alerts.map(({ alert }) => alert), omitted };
}

/**
 * `GET /api/v2/alerts/groups`: one group per (route, receiver, group labels) as Alertmanager's
 * dispatcher forms them, with the labels of its group_by the alerts carry (all of them for `...`;
 * a page route groups by fingerprint: one alert a group).
 */
export function listAlertGroups(view: NotifierView, q: AlertQuery, now: number) {
  const groups = new Map<string, { labels: Record<string, string>; receiver: { name: string }; alerts: GettableAlert[] }>();
  for (const { entry, alert } of firingAlerts(view, coreOf(view.routes), q, now).alerts) {
    entry.groups ??= entry.routes.map((route) => {
      const names = route.page ? ['fingerprint'] : route.groupByAll ? Object.keys(alert.labels).sort() : route.groupBy;
      const labels: Record<string, string> = route.page
        ? { fingerprint: alert.fingerprint }
        : Object.fromEntries(
            names.flatMap((n): [string, string][] => {
              const value = Object.hasOwn(alert.labels, n) ? alert.labels[n] : undefined;
              return value === undefined ? [] : [[n, value]];
            }),
          );
      return { route, labels, key: `${route.id}|${route.receiver}|${JSON.stringify(labels)}` };
    });
    for (const { route, labels, key } of entry.groups) {
      if (q.receiver && !matchesValue(q.receiver, route.receiver)) continue;
      const group = groups.get(key) ?? { labels, receiver: { name: route.receiver }, alerts: [] };
      groups.set(key, group);
      group.alerts.push(alert);
    }
  }
  return [...groups.values()];
}
