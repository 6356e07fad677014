import { decodeVersioned, encodeVersioned, stableId, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import { alertLabels } from './alert-labels.ts';
import { labelValue, parseMatchers, type Matcher } from './matchers.ts';
import type { RoutesFile } from './route-config.ts';
import {
  dict,
  type AlertView,
  type AlertmanagerGroup,
  type NotifierState,
  type Notification,
  type Reason,
  type ResolvedRoute,
  type Silence,
  type Suppression,
  type AlertMarkers,
  type ReadAt,
} from './notifier-types.ts';
import { routesFor } from './routing.ts';
import { SilenceIndex } from './silence-index.ts';
import { NOTIFIER_STATE } from './saved-notifier-state.ts';
import { Inhibitor } from './stages/inhibitor.ts';
import { activeTimeStage, held, inhibitStage, muteTimeStage, silenceStage, type Hold, type MuteStage } from './stages/mute-stages.ts';
import { dedup, due, recordSent, settle, view as groupView } from './stages/group-stages.ts';

export type {
  AlertAbout,
  AlertMarkers,
  AlertmanagerGroup,
  AlertView,
  Group,
  Notification,
  NotifierState,
  Reason,
  Silence,
  Suppression,
  Told,
} from './notifier-types.ts';
export { dict, type Dict } from './notifier-types.ts';
export {
  MAX_SAVED_ALERTS,
  MAX_SAVED_ALERTS_PER_GROUP,
  MAX_SAVED_ENTRY_CHARS,
  MAX_SAVED_GROUPS,
  MAX_SAVED_SILENCES,
  NOTIFIER_STATE,
  SavedNotification,
  SILENCE,
} from './saved-notifier-state.ts';

export function emptyNotifierState(): NotifierState {
  return { groups: dict(), pages: dict(), silences: dict(), firing: dict(), sources: dict(), about: dict() };
}

/** The state as saved: versioned JSON (see saved-notifier-state.ts for the schema, version and bounds). */
export function saveNotifierState(state: NotifierState): string {
  return encodeVersioned(NOTIFIER_STATE, state);
}

/** Saved state read back, and what became of it: as saved, migrated from an older version, or rebuilt empty (the reason is for one log line). */
export type LoadedNotifierState =
  { readonly state: NotifierState; readonly migratedFrom?: number; readonly rebuilt?: undefined } | { readonly state: NotifierState; readonly rebuilt: string };

/**
 * Saved state read back: validated against its schema, with every map inert again (JSON.parse
 * makes plain objects); an older version is migrated, and one that cannot be read (damaged,
 * hostile, over its bounds, from a newer gpualert) is rebuilt empty, never a crash.
 */
export function loadNotifierState(text: string | null): LoadedNotifierState {
  if (text === null) return { state: emptyNotifierState() };
  const loaded = decodeVersioned(NOTIFIER_STATE, text);
  if (!loaded.ok) return { state: emptyNotifierState(), rebuilt: loaded.reason };
  return loaded.migratedFrom === undefined ? { state: loaded.value } : { state: loaded.value, migratedFrom: loaded.migratedFrom };
}

/** The state as saved, read back (empty when it cannot be: see loadNotifierState, whose caller logs why). */
export function restoreNotifierState(text: string): NotifierState {
  return loadNotifierState(text).state;
}

export type Decision = { readonly send: Notification } | { readonly suppressed: Suppression };

/** The group's labels as Alertmanager's webhook shows them: those of group_by the alert carries (every label with `...`). */
export function groupLabelSet(route: ResolvedRoute, labels: Readonly<Record<string, string>>): Record<string, string> {
  const names = route.groupByAll ? Object.keys(labels).sort() : route.groupBy;
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = Object.hasOwn(labels, name) ? labels[name] : undefined;
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The group's labels as a key part: the route's group_by, or every label with `...` (sorted, as Alertmanager's group key). */
export function groupLabels(route: ResolvedRoute, labels: Readonly<Record<string, string>>): string {
  const names = route.groupByAll ? Object.keys(labels).sort() : route.groupBy;
  return names.map((l) => `${l}=${JSON.stringify(labelValue(labels, l))}`).join(',');
}

function view(alert: EnvelopeOf<'alert'>): AlertView {
  const a = alert.data;
  return {
    id: alert.id,
    fingerprint: a.fingerprint,
    host: alert.host,
    status: a.status,
    severity: a.severity,
    category: a.category,
    summary: a.summary,
    ...(a.description ? { description: a.description } : {}),
    startsAt: a.starts_at,
    expected: a.expected === true,
    evidence: a.evidence,
    labels: alertLabels(alert),
    ...(a.action ? { action: a.action } : {}),
    ...(a.gpu ? { gpu: a.gpu.index } : {}),
    ...(a.ends_at ? { endsAt: a.ends_at } : {}),
    ...(a.annotations ? { annotations: a.annotations } : {}),
  };
}

/**
 * The notifier's decisions, pure: routing, silences, inhibition, grouping with group_wait,
 * group_interval and repeat_interval, page per fault, and a notification log that decides
 * whether to send and says why. Delivery is the shell's job.
 */
/** Routing done between two pauses of a reload's adopt, in ms. */
const ADOPT_SLICE_MS = 10;
/**
 * A maintenance silence holds the pager this long before the announced window opens and after it
 * ends: the engine's own slack around a window (its alerts there are `expected`), so fallout just
 * before or after the window does not page either.
 */
export const MAINTENANCE_MARGIN_MS = 15 * 60_000;
/** A window announced without an end (or with one further off than this) is held at most this long from its start. */
export const MAINTENANCE_MAX_HOLD_MS = 7 * 86_400_000;

/**
 * When a maintenance window's silence holds: its announced start and end with the margin, else from
 * `now`, never longer than the bound. An announced end that is already past, or not after its
 * start, holds nothing (`endsAt <= now`: the caller makes no silence): only a notice with no end at
 * all is held for the bound.
 */
export function maintenanceHold(window: AlertData['window'], now: number): { startsAt: number; endsAt: number } {
  const start = window?.start !== undefined ? Date.parse(window.start) : NaN;
  const end = window?.end !== undefined ? Date.parse(window.end) : NaN;
  const startsAt = Number.isFinite(start) ? start - MAINTENANCE_MARGIN_MS : now;
  const latest = startsAt + MAINTENANCE_MAX_HOLD_MS;
  if (!Number.isFinite(end)) return { startsAt, endsAt: Math.max(latest, now) };
  if ((Number.isFinite(start) && end <= start) || end + MAINTENANCE_MARGIN_MS <= now) return { startsAt, endsAt: Math.min(startsAt, now) };
  return { startsAt, endsAt: Math.min(end + MAINTENANCE_MARGIN_MS, latest) };
}

/** A matcher no label set meets (an empty alternation): what a saved matcher text that does not parse stands for. */
const MATCHES_NOTHING: Matcher = { label: '', op: '=~', value: '', literals: new Set() };

export class NotifierCore {
  private readonly compiled = new Map<string, Matcher[]>();
  /** Each silences object's index (silence-index.ts): the state's `silences` is replaced wholesale when the service reloads it, and a new one is indexed at its first lookup. */
  private readonly indexes = new WeakMap<Record<string, Silence>, SilenceIndex>();

  private readonly inhibitor: Inhibitor;
  /** The mute stages in Alertmanager's order: inhibit, active time, mute time, silence (stages/mute-stages.ts). */
  private readonly stages: readonly MuteStage[];

  constructor(private readonly config: RoutesFile) {
    this.inhibitor = new Inhibitor(config.inhibit_rules);
    this.stages = [
      inhibitStage(this.inhibitor),
      activeTimeStage(config.time_intervals),
      muteTimeStage(config.time_intervals),
      silenceStage((state) => this.silenceIndex(state.silences)),
    ];
  }

  /** An alert transition arrives; `read`: where it was read (its partition and offset), which orders it against a page's resolve. */
  ingest(state: NotifierState, alert: EnvelopeOf<'alert'>, now: number, read?: ReadAt): Decision[] {
    const decisions: Decision[] = [];
    const a = view(alert);
    this.index(state, a, now);
    this.maintenanceSilence(state, a, alert.data.window, now);
    for (const route of routesFor(this.config.route, a.labels)) {
      const blocked = a.status === 'firing' ? this.suppressedBy(state, route, a, now) : undefined;
      if (route.page) {
        const key = `${route.receiver}|${a.fingerprint}`;
        const told = state.pages[key];
        if (a.status === 'resolved') {
          // Always resolve what was paged, whatever silenced or inhibited it since.
          if (told?.status === 'firing') {
            decisions.push(...this.notifications(route, `page:${a.fingerprint}`, 'page_resolve', [a], 0, [a], a.labels));
            // Kept as resolved for a while (forgetResolvedPages): a replica reading a backlog takes the
            // fault's old firing for old news, as Alertmanager's notification log tells its peers.
            state.pages[key] = {
              status: 'resolved',
              severity: told.severity,
              at: now,
              ...(read ? { partition: read.partition, offset: read.offset, episode: a.startsAt.slice(0, 64) } : {}),
            };
          }
          continue;
        }
        // Read before the resolve the pager was told, on the same partition, of the same episode (a replica behind the others, reading a backlog): old news.
        if (
          told?.status === 'resolved' &&
          read &&
          told.partition === read.partition &&
          told.offset !== undefined &&
          read.offset < told.offset &&
          told.episode === a.startsAt.slice(0, 64)
        )
          continue;
        if (blocked) {
          decisions.push({ suppressed: { receiver: route.receiver, fingerprints: [a.fingerprint], ...blocked } });
          continue;
        }
        // A new fault pages, and so does a worse severity; the same again does not.
        if (told?.status === 'firing' && told.severity === a.severity) continue;
        state.pages[key] = { status: 'firing', severity: a.severity, at: now };
        decisions.push(...this.notifications(route, `page:${a.fingerprint}`, 'page', [a], 1, [a], a.labels));
        continue;
      }
      const key = `${route.id}|${route.receiver}|${groupLabels(route, a.labels)}`;
      let group = state.groups[key];
      if (!group) {
        if (a.status === 'resolved') continue; // nothing was told about it here
        const wait = route.criticalWithoutWait && a.severity === 'critical' ? 0 : route.groupWait;
        group = { key, route, alerts: dict(), told: dict(), nextFlush: now + wait, lastSent: 0 };
        state.groups[key] = group;
      } else if (a.status === 'firing' && a.severity === 'critical' && route.criticalWithoutWait && !group.told[a.fingerprint]) {
        group.nextFlush = Math.min(group.nextFlush, now);
      }
      if (blocked && !group.told[a.fingerprint]) decisions.push({ suppressed: { receiver: route.receiver, fingerprints: [a.fingerprint], ...blocked } });
      // Held back alerts stay in their group, as in Alertmanager: each flush looks again, so one
      // whose silence expires or whose inhibiting alert resolves is told then, not at its next push.
      group.alerts[a.fingerprint] = a;
    }
    return decisions;
  }

  /**
   * Takes over a state another core (the routes before a reload) built, as Alertmanager rebuilds
   * its aggregation groups on reload and keeps its notification log: every alert of every group
   * is routed again through these routes. A group whose key is unchanged keeps its timers and what
   * it told; an alert whose route changed joins its new group as news (its new receiver is told
   * after group_wait; its old one is not told it resolved). The inhibition index is rebuilt for
   * these rules. Pages and silences are kept as they are. Returns what moved, for one log line.
   */
  async adopt(
    state: NotifierState,
    now: number,
    pause: () => Promise<void> = () => Promise.resolve(),
  ): Promise<{ kept: number; moved: number; groups: number }> {
    const before = state.groups;
    state.groups = dict();
    let kept = 0;
    let moved = 0;
    // Every grouped alert through the whole tree: `pause` is awaited every 10 ms of it, so a large
    // state or tree does not hold the caller's event loop (the service yields there; probes answer).
    let slice = performance.now();
    for (const old of Object.values(before)) {
      for (const alert of Object.values(old.alerts)) {
        if (performance.now() - slice > ADOPT_SLICE_MS) {
          await pause();
          slice = performance.now();
        }
        for (const route of routesFor(this.config.route, alert.labels)) {
          if (route.page) continue;
          const labels = groupLabels(route, alert.labels);
          const key = `${route.id}|${route.receiver}|${labels}`;
          // The same receiver and group labels is the same group, though its route's place in the
          // file moved (a route inserted above it): its log and timers come along, nothing is news.
          const same = key === old.key || (route.receiver === old.route.receiver && labels === groupLabels(old.route, alert.labels));
          // A resolved alert its old group never told of, or that moves, is nothing to its new group.
          if (alert.status === 'resolved' && (!same || old.told[alert.fingerprint] === undefined)) continue;
          const previous = before[key] ?? (same ? old : undefined);
          let group = state.groups[key];
          if (!group) {
            const wait = route.criticalWithoutWait && alert.severity === 'critical' ? 0 : route.groupWait;
            group = previous
              ? { key, route, alerts: dict(), told: dict(), nextFlush: previous.nextFlush, lastSent: previous.lastSent }
              : { key, route, alerts: dict(), told: dict(), nextFlush: now + wait, lastSent: 0 };
            state.groups[key] = group;
          } else if (!previous && route.criticalWithoutWait && alert.severity === 'critical') {
            group.nextFlush = Math.min(group.nextFlush, now);
          }
          group.alerts[alert.fingerprint] = alert;
          const told = previous?.told[alert.fingerprint];
          if (told) group.told[alert.fingerprint] = told;
          if (same) kept += 1;
          else moved += 1;
        }
      }
    }
    state.sources = dict();
    for (const fingerprint of Object.keys(state.firing)) {
      const alert = state.firing[fingerprint];
      if (alert) this.inhibitor.remember(state, fingerprint, alert);
    }
    return { kept, moved, groups: Object.keys(state.groups).length };
  }

  /** Groups whose time has come send what changed. */
  flush(state: NotifierState, now: number): Decision[] {
    const decisions: Decision[] = [];
    for (const key of this.dueGroups(state, now)) decisions.push(...this.flushGroup(state, key, now));
    this.expireSilences(state, now);
    return decisions;
  }

  /** The keys of the groups whose time has come (the wait stage), for a caller that flushes them one at a time. */
  dueGroups(state: Readonly<NotifierState>, now: number): string[] {
    return Object.keys(state.groups).filter((key) => {
      const group = state.groups[key];
      return group !== undefined && due(group, now);
    });
  }

  /**
   * One group's flush, through the stages: each firing alert through the mute stages, the rest
   * deduplicated against the notification log, a message per integration when there is news,
   * and the log set to what was sent.
   */
  flushGroup(state: NotifierState, key: string, now: number): Decision[] {
    const group = state.groups[key];
    if (!group || !due(group, now)) return [];
    const seen = groupView(group, (alert) => this.suppressedBy(state, group.route, alert, now));
    const news = dedup(group, seen, now);
    const decisions: Decision[] = [];
    if (news) {
      const all = [...seen.shown, ...seen.changed.filter((a) => a.status === 'resolved')];
      decisions.push(...this.notifications(group.route, group.key, news.reason, news.alerts, seen.firing, all, all[0]?.labels ?? dict()));
      recordSent(group, news.alerts, now);
    }
    settle(state, group, now);
    return decisions;
  }

  /** After the groups of a flush: silences past their end expire, and a day after that are forgotten. */
  expireSilences(state: NotifierState, now: number): void {
    for (const silence of Object.values(state.silences)) {
      if (silence.expiredAt === undefined && silence.endsAt <= now) silence.expiredAt = silence.endsAt;
      // Expired silences are kept a day for the timeline, then forgotten.
      if (silence.expiredAt !== undefined && now - silence.expiredAt > 86_400_000) {
        delete state.silences[silence.id];
        this.indexes.get(state.silences)?.remove(silence.id);
      }
    }
  }

  addSilence(state: NotifierState, silence: Silence): void {
    for (const text of silence.matchers) {
      const parsed = parseMatchers(text);
      if (typeof parsed === 'string') throw new Error(parsed);
    }
    state.silences[silence.id] = silence;
    this.indexed(state, silence);
  }

  expireSilence(state: NotifierState, id: string, now: number): boolean {
    const silence = state.silences[id];
    if (!silence || silence.expiredAt !== undefined) return false;
    silence.expiredAt = now;
    silence.endsAt = Math.min(silence.endsAt, now);
    return true;
  }

  /**
   * Every active silence that holds the alert for at least one of its `receivers` (one for all
   * receivers always does; a maintenance window's, for the pager only, when the alert goes to the
   * pager) and every firing alert that inhibits this one now: Alertmanager's silencedBy and
   * inhibitedBy. Read-only: the API shows it, decisions use suppressedBy.
   */
  markers(
    state: Readonly<NotifierState>,
    fingerprint: string,
    labels: Readonly<Record<string, string>>,
    now: number,
    receivers: readonly string[] = [],
  ): AlertMarkers {
    const silencedBy = this.silenceIndex(state.silences)
      .all(labels, now, receivers)
      .map((s) => s.id);
    return { silencedBy: silencedBy.sort(), inhibitedBy: this.inhibitor.all(state, fingerprint, labels) };
  }

  /** The first mute stage that holds this alert back from the route's receiver, and why. */
  private suppressedBy(state: NotifierState, route: ResolvedRoute, alert: AlertView, now: number): Hold | undefined {
    return held(this.stages, { state, route, alert, now });
  }

  /**
   * An announced maintenance window silences its host for the pager receivers while it is open
   * (its announced start to its end, MAINTENANCE_MARGIN_MS either side), and the silence expires
   * when the window's alert resolves: maintenance fallout never pages, chat still sees it. A window
   * the provider moves moves its silence; one without times is held from the notice until it resolves.
   */
  private maintenanceSilence(state: NotifierState, alert: AlertView, window: AlertData['window'], now: number): void {
    if (alert.category !== 'maintenance') return;
    const id = `maintenance-${alert.fingerprint}`;
    const existing = state.silences[id];
    if (alert.status === 'resolved') {
      if (existing) this.expireSilence(state, id, now);
      return;
    }
    const pagers = [
      ...new Set(
        routesFor(this.config.route, dict([...Object.entries(alert.labels), ['severity', 'critical'], ['expected', 'false'], ['category', 'host_down']]))
          .filter((r) => r.page)
          .map((r) => r.receiver),
      ),
    ];
    if (pagers.length === 0) return;
    const { startsAt, endsAt } = maintenanceHold(window, now);
    const announced = window?.start !== undefined || window?.end !== undefined;
    // The same window again (a repeat, an escalation) leaves its silence as it is, expired or not; a moved one moves it.
    if (existing && (announced ? existing.startsAt === startsAt && existing.endsAt === endsAt : existing.expiredAt === undefined)) return;
    // A window already over (a notice read late, a recording replayed) holds nothing: no silence, and one it had ends.
    if (endsAt <= now) {
      if (existing) this.expireSilence(state, id, now);
      return;
    }
    const held = `${new Date(startsAt).toISOString()} – ${new Date(endsAt).toISOString()}`;
    const silence: Silence = {
      id,
      matchers: [`host="${alert.host.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`],
      receivers: pagers,
      startsAt,
      endsAt,
      createdBy: 'gpualert',
      comment: `provider maintenance, pager receivers only (${pagers.join(', ')}), held ${held}${
        window?.start || window?.end
          ? ` (the window ${window.start ?? '?'} – ${window.end ?? '?'}, ${MAINTENANCE_MARGIN_MS / 60_000} min either side)`
          : ' (no window announced: until it resolves)'
      }: ${alert.summary}`.slice(0, 1024),
    };
    state.silences[id] = silence;
    this.indexed(state, silence);
  }

  /** Keeps the firing alerts and the inhibition index up to date, so a lookup is one map access. */
  private index(state: NotifierState, alert: AlertView, now: number): void {
    state.sources ??= dict();
    state.about ??= dict();
    const before = state.firing[alert.fingerprint];
    if (before) {
      this.inhibitor.forget(state, alert.fingerprint, before);
      delete state.firing[alert.fingerprint];
      delete state.about[alert.fingerprint];
    }
    if (alert.status === 'firing') {
      state.firing[alert.fingerprint] = dict(Object.entries(alert.labels));
      state.about[alert.fingerprint] = {
        startsAt: alert.startsAt,
        updatedAt: now,
        summary: alert.summary,
        ...(alert.description ? { description: alert.description } : {}),
        ...(alert.evidence.length > 0 ? { evidence: alert.evidence } : {}),
        ...(alert.annotations ? { annotations: alert.annotations } : {}),
      };
      this.inhibitor.remember(state, alert.fingerprint, alert.labels);
    }
  }

  /** The index of this silences object, built at its first lookup. */
  private silenceIndex(silences: Record<string, Silence>): SilenceIndex {
    let index = this.indexes.get(silences);
    if (!index) {
      index = new SilenceIndex(silences, (texts) => this.matchers(texts));
      this.indexes.set(silences, index);
    }
    return index;
  }

  /** A silence just set in the state: filed in its index, or the index dropped (rebuilt at the next lookup) when it cannot be placed. */
  private indexed(state: NotifierState, silence: Silence): void {
    const index = this.indexes.get(state.silences);
    if (index && !index.add(silence)) this.indexes.delete(state.silences);
  }

  private matchers(texts: readonly string[]): Matcher[] {
    const key = texts.join('\u0000');
    let compiled = this.compiled.get(key);
    if (!compiled) {
      // A saved silence's text that no longer parses matches nothing, as it never could.
      compiled = texts.flatMap((t) => {
        const parsed = parseMatchers(t);
        return typeof parsed === 'string' ? [MATCHES_NOTHING] : parsed;
      });
      this.compiled.set(key, compiled);
    }
    return compiled;
  }

  /** One notification per integration of the route's receiver; one with send_resolved: false is told only what fires. */
  private notifications(
    route: ResolvedRoute,
    group: string,
    reason: Reason,
    alerts: AlertView[],
    firing: number,
    all: AlertView[],
    labels: Readonly<Record<string, string>>,
  ): Decision[] {
    const integrations = this.config.integrations?.[route.receiver] ?? [route.receiver];
    const out: Decision[] = [];
    const groupLabels = route.page ? dict<string>() : groupLabelSet(route, labels);
    for (const name of integrations) {
      const sendResolved = this.config.receivers.find((r) => r.name === name)?.send_resolved !== false;
      const told = sendResolved ? alerts : alerts.filter((a) => a.status === 'firing');
      if (told.length === 0) continue;
      const alertmanager: AlertmanagerGroup = { receiver: route.receiver, groupLabels, alerts: sendResolved ? all : all.filter((a) => a.status === 'firing') };
      out.push({
        send: {
          id: stableId('notification', name, group, reason, ...told.map((a) => `${a.id}`)),
          receiver: name,
          group,
          reason,
          alerts: told,
          firing,
          alertmanager,
        },
      });
    }
    return out;
  }
}
