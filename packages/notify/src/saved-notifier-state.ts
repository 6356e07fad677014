import { savedRecord, Severity, type VersionedState } from '@gpualert/schema';
import { z } from 'zod';
import type { AlertAbout, AlertView, Notification, NotifierState, Silence } from './notifier-types.ts';

/**
 * The notifier's saved state as it is read back: schemas, versions and bounds. Version 1 is the
 * first with a `version`; version 0 is what gpualert wrote before (the same fields, no version),
 * and migrates as it is once it validates.
 *
 * Bounds on what is loaded (past any of them the whole state is rebuilt, with one log line):
 * 100,000 groups, 100,000 alerts in a group, 1,000,000 pages, firing alerts, inhibition keys and
 * alert texts, 10,000 silences, 256 labels per alert, 10,000 evidence ids per alert, 1,000,000
 * sources per inhibition key, 512 MiB of text (Redis's largest string).
 */
export const MAX_SAVED_GROUPS = 100_000;
export const MAX_SAVED_ALERTS_PER_GROUP = 100_000;
export const MAX_SAVED_ALERTS = 1_000_000;
export const MAX_SAVED_SILENCES = 10_000;
export const MAX_SAVED_LABELS = 256;
export const MAX_SAVED_EVIDENCE = 10_000;
export const MAX_SAVED_STATE_CHARS = 512 * 1024 * 1024;
/** One silence or one outbox entry: a silence is under 64 KiB (the API's body limit); a notification of a 100,000-alert group stays under this. */
export const MAX_SAVED_ENTRY_CHARS = 64 * 1024 * 1024;
/** Matchers and receivers a saved silence may carry. */
export const MAX_SAVED_SILENCE_ITEMS = 256;

const time = z.number().finite();
const count = z.number().finite();
const labels = savedRecord(z.string(), MAX_SAVED_LABELS);
const strings = (max: number) => z.array(z.string()).max(max);

export const SavedAlertView = z.object({
  id: z.string(),
  fingerprint: z.string(),
  host: z.string(),
  status: z.enum(['firing', 'resolved']),
  severity: Severity,
  category: z.string(),
  summary: z.string(),
  description: z.exactOptional(z.string()),
  action: z.exactOptional(z.string()),
  gpu: z.exactOptional(z.number().int().min(0)),
  startsAt: z.string(),
  endsAt: z.exactOptional(z.string()),
  expected: z.boolean(),
  evidence: strings(MAX_SAVED_EVIDENCE),
  labels,
  annotations: z.exactOptional(labels),
}) satisfies z.ZodType<AlertView>;

const Told = z.object({
  status: z.enum(['firing', 'resolved']),
  severity: Severity,
  at: time,
  partition: z.exactOptional(z.number().int().nonnegative()),
  offset: z.exactOptional(z.number().int().nonnegative()),
  episode: z.exactOptional(z.string().max(64)),
});

const Route = z.object({
  id: z.string(),
  receiver: z.string(),
  groupBy: strings(MAX_SAVED_LABELS),
  groupByAll: z.boolean(),
  groupWait: count,
  groupInterval: count,
  repeatInterval: count,
  page: z.boolean(),
  criticalWithoutWait: z.boolean(),
  mute: strings(MAX_SAVED_SILENCE_ITEMS),
  active: strings(MAX_SAVED_SILENCE_ITEMS),
});

const Group = z.object({
  key: z.string(),
  route: Route,
  alerts: savedRecord(SavedAlertView, MAX_SAVED_ALERTS_PER_GROUP),
  told: savedRecord(Told, MAX_SAVED_ALERTS_PER_GROUP),
  nextFlush: time,
  lastSent: time,
});

export const SavedSilence = z.object({
  id: z.string().min(1),
  matchers: strings(MAX_SAVED_SILENCE_ITEMS),
  receivers: z.exactOptional(strings(MAX_SAVED_SILENCE_ITEMS)),
  startsAt: time,
  endsAt: time,
  createdBy: z.string(),
  comment: z.string(),
  expiredAt: z.exactOptional(time),
}) satisfies z.ZodType<Silence>;

const About = z.object({
  startsAt: z.string(),
  updatedAt: time,
  summary: z.string(),
  description: z.exactOptional(z.string()),
  evidence: z.exactOptional(strings(MAX_SAVED_EVIDENCE)),
  annotations: z.exactOptional(labels),
}) satisfies z.ZodType<AlertAbout>;

const SavedNotifierState = z.object({
  groups: savedRecord(Group, MAX_SAVED_GROUPS),
  pages: savedRecord(Told, MAX_SAVED_ALERTS),
  silences: savedRecord(SavedSilence, MAX_SAVED_SILENCES),
  firing: savedRecord(labels, MAX_SAVED_ALERTS),
  sources: savedRecord(strings(MAX_SAVED_ALERTS), MAX_SAVED_ALERTS),
  about: savedRecord(About, MAX_SAVED_ALERTS),
}) satisfies z.ZodType<NotifierState>;

/**
 * Version 0 (before versioned state) had the same fields; `sources` and `about` came later in its
 * life, so a state without them gets them empty, as the core's `index` filled them in then.
 */
function migrateState(raw: unknown, from: number): unknown {
  if (from !== 0 || typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const v0 = raw as Record<string, unknown>;
  return { groups: {}, pages: {}, silences: {}, firing: {}, sources: {}, about: {}, ...v0 };
}

/*
 * The layout from version 2 on: a step writes what it changed, not the whole state. Each group's
 * head is one field of a hash (field = the group's key), each of its alerts one field of another
 * (field = the JSON array [group key, fingerprint]), each firing alert's labels and text one field
 * of a third (field = its fingerprint), and the rest (pages, the inhibition index) is one document at
 * `notifier:state`, version 2, which a gpualert of version 1 reads as newer and does not misread.
 * Silences are not in it: each is saved on its own in the silences hash.
 */

/**
 * A group's head: what the group is, without its alerts (version 2). Each alert of the group and
 * what was told about it is a field of its own (SAVED_GROUP_ALERT): a storm's group of 20,000
 * alerts was one field of megabytes, written again whole at every step that touched one of them.
 * A version 1 group (the first saved alone, alerts inside) reads as a head that still carries them, to be split.
 */
const GroupHead = Group.omit({ alerts: true, told: true }).extend({ alerts: z.exactOptional(Group.shape.alerts), told: z.exactOptional(Group.shape.told) });
export type SavedGroupHead = z.infer<typeof GroupHead>;
export const SAVED_GROUP_HEAD: VersionedState<SavedGroupHead> = {
  name: 'notifier group',
  version: 2,
  schema: GroupHead,
  migrate: (raw, from) => (from === 1 ? raw : undefined),
  maxChars: MAX_SAVED_ENTRY_CHARS,
};

/** One alert of a group (version 1): the alert as the group holds it and what this group's receiver was told of it; either may be absent. */
const GroupAlert = z.object({ group: z.string(), fingerprint: z.string(), alert: z.exactOptional(SavedAlertView), told: z.exactOptional(Told) });
export type SavedGroupAlert = z.infer<typeof GroupAlert>;
export const SAVED_GROUP_ALERT: VersionedState<SavedGroupAlert> = {
  name: 'notifier group alert',
  version: 1,
  schema: GroupAlert,
  migrate: () => undefined,
  maxChars: MAX_SAVED_ENTRY_CHARS,
};

/** A firing alert as the state indexes it: its labels (an inhibition source) and what the alert list shows of it. */
export interface FiringAlert {
  readonly labels: Record<string, string>;
  readonly about?: AlertAbout;
}

/** One firing alert, alone (version 1). */
export const SAVED_FIRING_ALERT: VersionedState<FiringAlert> = {
  name: 'notifier firing alert',
  version: 1,
  schema: z.object({ labels, about: z.exactOptional(About) }),
  migrate: () => undefined,
  maxChars: MAX_SAVED_ENTRY_CHARS,
};

/** The state besides its groups, firing alerts and silences. */
export type NotifierStateRest = Pick<NotifierState, 'pages' | 'sources'>;

/** The rest, one document (version 2: version 1 was the whole state, read with NOTIFIER_STATE and migrated by the notifier's loader). */
export const NOTIFIER_STATE_REST: VersionedState<NotifierStateRest> = {
  name: 'notifier state',
  version: 2,
  schema: SavedNotifierState.pick({ pages: true, sources: true }),
  migrate: () => undefined,
  maxChars: MAX_SAVED_STATE_CHARS,
};

/**
 * The whole state in one document, as gpualert wrote `notifier:state` up to version 1: read to
 * migrate such a store to the layout above (`saveNotifierState` still writes it, for tests and
 * tools). `layout` carries that layout's specs, so they reach the service through this export.
 */
export const NOTIFIER_STATE: VersionedState<NotifierState> & {
  readonly layout: {
    readonly group: typeof SAVED_GROUP_HEAD;
    readonly groupAlert: typeof SAVED_GROUP_ALERT;
    readonly firingAlert: typeof SAVED_FIRING_ALERT;
    readonly rest: typeof NOTIFIER_STATE_REST;
  };
} = {
  name: 'notifier state',
  version: 1,
  schema: SavedNotifierState,
  migrate: migrateState,
  maxChars: MAX_SAVED_STATE_CHARS,
  layout: { group: SAVED_GROUP_HEAD, groupAlert: SAVED_GROUP_ALERT, firingAlert: SAVED_FIRING_ALERT, rest: NOTIFIER_STATE_REST },
};

/** A silence is stored alone, per id, in the silences hash; version 0 had the same fields. */
export const SILENCE: VersionedState<Silence> = {
  name: 'silence',
  version: 1,
  schema: SavedSilence,
  migrate: (raw, from) => (from === 0 ? raw : undefined),
  maxChars: MAX_SAVED_ENTRY_CHARS,
};

const AlertmanagerGroup = z.object({ receiver: z.string(), groupLabels: labels, alerts: z.array(SavedAlertView).max(MAX_SAVED_ALERTS_PER_GROUP) });

export const SavedNotification = z.object({
  id: z.string().min(1),
  receiver: z.string().min(1),
  group: z.string(),
  reason: z.enum(['first', 'new_alerts', 'changed', 'resolved', 'repeat', 'page', 'page_resolve']),
  alerts: z.array(SavedAlertView).max(MAX_SAVED_ALERTS_PER_GROUP),
  firing: count,
  alertmanager: z.exactOptional(AlertmanagerGroup),
}) satisfies z.ZodType<Notification>;
