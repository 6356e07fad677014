import type { AlertView, NotifierState, Reason } from '../notifier-types.ts';
import type { Hold } from './mute-stages.ts';

type Group = NotifierState['groups'][string];

/**
 * The stages of a group's flush after the mute stages, as Alertmanager's receiver stage runs them
 * per integration: wait (group_wait, then group_interval), dedup against the notification log,
 * and, once the message is queued, the log set to what was sent. Retrying is the delivery's
 * (services/notifier/src/delivery.ts), as Alertmanager's RetryStage is the integration's.
 */

/** Wait: the group's time has come (group_wait after its first alert, group_interval after each flush). */
export function due(group: Group, now: number): boolean {
  return now >= group.nextFlush;
}

/** What a flush of the group sees: what fires and no mute stage holds, and what changed since the log. */
export interface GroupView {
  /** Firing and not held back: the group as Alertmanager's webhook shows it. */
  readonly shown: AlertView[];
  /** Firing and new or changed since told, or resolved after being told it fired. */
  readonly changed: AlertView[];
  /** Firing, held back or not. */
  readonly firing: number;
}

/** Splits the group's alerts by the mute stages (`hold`) and the notification log. */
export function view(group: Group, hold: (alert: AlertView) => Hold | undefined): GroupView {
  const shown: AlertView[] = [];
  const changed: AlertView[] = [];
  let firing = 0;
  for (const alert of Object.values(group.alerts)) {
    const told = group.told[alert.fingerprint];
    if (alert.status === 'firing') {
      firing += 1;
      if (hold(alert)) continue;
      shown.push(alert);
      if (!told || told.status !== 'firing' || told.severity !== alert.severity) changed.push(alert);
    } else if (told?.status === 'firing') {
      changed.push(alert); // always resolve what was sent
    }
  }
  return { shown, changed, firing };
}

/**
 * Dedup (Alertmanager's DedupStage against its notification log): whether to send and why, and
 * which alerts the message is about. News is sent at once; with none, what still fires is told
 * again after repeat_interval; otherwise nothing.
 */
export function dedup(group: Group, seen: GroupView, now: number): { reason: Reason; alerts: AlertView[] } | undefined {
  const { changed, shown } = seen;
  if (changed.length > 0) {
    const resolvedOnly = changed.every((a) => a.status === 'resolved');
    const reason = group.lastSent === 0 ? 'first' : resolvedOnly ? 'resolved' : changed.some((a) => !group.told[a.fingerprint]) ? 'new_alerts' : 'changed';
    return { reason, alerts: changed };
  }
  if (seen.firing > 0 && group.lastSent > 0 && now - group.lastSent >= group.route.repeatInterval && shown.length > 0)
    return { reason: 'repeat', alerts: shown };
  return undefined;
}

/** The notification log set to what was sent (Alertmanager's SetNotifiesStage): a told record replaced, never edited. */
export function recordSent(group: Group, alerts: readonly AlertView[], now: number): void {
  group.lastSent = now;
  for (const alert of alerts) group.told[alert.fingerprint] = { status: alert.status, severity: alert.severity, at: now };
}

/**
 * After a flush: resolved alerts leave the group (and the log), the next flush is group_interval
 * after the one due now (not after now: a flush a tick late does not push every later one back,
 * so replicas of a cluster, which started the group at the same alert, keep flushing in step), and
 * an empty group is gone. A flush later than a whole interval waits a whole interval from now.
 */
export function settle(state: NotifierState, group: Group, now: number): void {
  for (const alert of Object.values(group.alerts)) {
    if (alert.status === 'resolved') {
      delete group.alerts[alert.fingerprint];
      delete group.told[alert.fingerprint];
    }
  }
  const next = group.nextFlush + group.route.groupInterval;
  group.nextFlush = next > now ? next : now + group.route.groupInterval;
  if (Object.keys(group.alerts).length === 0) delete state.groups[group.key];
}
