import type { Severity } from '@gpualert/schema';

/**
 * The notifier's data: what a message says, the state the core keeps, the route an alert took.
 * Shared by the core, its stages, the channels and the saved layouts; it imports nothing of
 * theirs, so none of them import each other through it (no import circle).
 */

/** A route as it applies to an alert: the receiver and every inherited setting resolved. */
export interface ResolvedRoute {
  readonly id: string;
  readonly receiver: string;
  readonly groupBy: readonly string[];
  readonly groupByAll: boolean;
  readonly groupWait: number;
  readonly groupInterval: number;
  readonly repeatInterval: number;
  readonly page: boolean;
  readonly criticalWithoutWait: boolean;
  readonly mute: readonly string[];
  readonly active: readonly string[];
}

/** What a message says about one alert. */
export interface AlertView {
  readonly id: string;
  readonly fingerprint: string;
  readonly host: string;
  readonly status: 'firing' | 'resolved';
  readonly severity: Severity;
  readonly category: string;
  readonly summary: string;
  readonly description?: string;
  readonly action?: string;
  readonly gpu?: number;
  readonly startsAt: string;
  readonly endsAt?: string;
  readonly expected: boolean;
  readonly evidence: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  /** Every annotation a pushed alert carries (runbook_url, dashboard…), for webhooks, templates and the API. */
  readonly annotations?: Readonly<Record<string, string>>;
}

export type Reason = 'first' | 'new_alerts' | 'changed' | 'resolved' | 'repeat' | 'page' | 'page_resolve';

export interface Notification {
  readonly id: string;
  readonly receiver: string;
  readonly group: string;
  readonly reason: Reason;
  /** The alerts the message is about: what changed (or, for a repeat, what still fires). */
  readonly alerts: readonly AlertView[];
  /** Still firing in the group, for context. */
  readonly firing: number;
  /** The group as Alertmanager's webhook shows it (absent in notifications queued by older versions). */
  readonly alertmanager?: AlertmanagerGroup;
}

/** What Alertmanager's webhook payload says besides the changes: the receiver (not the integration), the group labels, every alert of the group. */
export interface AlertmanagerGroup {
  readonly receiver: string;
  readonly groupLabels: Readonly<Record<string, string>>;
  /** Every alert of the group now: what fires (not silenced, inhibited or muted) and what resolved since the last message. */
  readonly alerts: readonly AlertView[];
}

export interface Suppression {
  readonly receiver: string;
  readonly fingerprints: readonly string[];
  readonly reason: 'silenced' | 'inhibited' | 'muted';
  readonly detail: string;
}

export interface Silence {
  readonly id: string;
  readonly matchers: readonly string[];
  /** Only these receivers are silenced (a maintenance window's own silence spares chat). */
  readonly receivers?: readonly string[];
  readonly startsAt: number;
  endsAt: number;
  readonly createdBy: string;
  readonly comment: string;
  expiredAt?: number;
}

export interface Told {
  status: 'firing' | 'resolved';
  severity: Severity;
  at: number;
  /**
   * A page's resolve: where the alert that resolved it was read (its topic partition and offset).
   * Alerts are keyed by host, so a fault's firings and resolves share a partition, in order: a
   * firing read at an earlier offset of it is old news (a replica behind the others, reading a
   * backlog), a later one is the fault again. Offsets, not clocks: no skew can hide a new fault.
   */
  partition?: number;
  offset?: number;
  /**
   * The resolved alert's `startsAt`: a firing is old news only if it is of the same episode too, so
   * a topic recreated (its offsets from 0 again) cannot make a new fault look old.
   */
  episode?: string;
}

/** Where an alert was read: its topic partition and offset. */
export interface ReadAt {
  readonly partition: number;
  readonly offset: number;
}

export interface Group {
  key: string;
  route: ResolvedRoute;
  alerts: Record<string, AlertView>;
  /** The notification log of this (group, receiver): what was told about each alert. */
  told: Record<string, Told>;
  nextFlush: number;
  lastSent: number;
}

export interface NotifierState {
  groups: Record<string, Group>;
  /** Page per fault: what each pager receiver was told per fingerprint. */
  pages: Record<string, Told>;
  silences: Record<string, Silence>;
  /** Firing alerts' labels, as inhibition sources. */
  firing: Record<string, Record<string, string>>;
  /** Inhibition index: `rule|equal values` → the firing sources' fingerprints. */
  sources: Record<string, string[]>;
  /** Firing alerts' text and times, for the API's alert list (silenced and paged ones are in no group). */
  about: Record<string, AlertAbout>;
}

/** What the alert list shows of a firing alert besides its labels. */
export interface AlertAbout {
  readonly startsAt: string;
  readonly updatedAt: number;
  readonly summary: string;
  readonly description?: string;
  readonly evidence?: readonly string[];
  readonly annotations?: Readonly<Record<string, string>>;
}

/** What holds a firing alert back now, as Alertmanager's API reports it: every silence and every inhibiting alert. */
export interface AlertMarkers {
  readonly silencedBy: string[];
  readonly inhibitedBy: string[];
}

/** A map keyed by outside data (fingerprints, label values, receivers): no prototype to collide with. */
export type Dict<T> = Record<string, T>;
export function dict<T>(entries: Iterable<readonly [string, T]> = []): Dict<T> {
  const out = Object.create(null) as Dict<T>;
  for (const [key, value] of entries) out[key] = value;
  return out;
}
