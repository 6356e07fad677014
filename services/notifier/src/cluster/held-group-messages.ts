import type { Decision, Notification, Told } from '@gpualert/notify';
import type { NotificationLogEntry } from './shared-notification-log.ts';

/** A group's flush a replica after the first decided, held for its wait. */
interface HeldFlush {
  readonly group: string;
  /** When the flush was due: the same on every replica (the group's clock starts at its first alert's publication). */
  readonly decidedAt: number;
  readonly sends: readonly Notification[];
  readonly dueAt: number;
}

/** Flushes held at once at most (one per group and tick); past it a flush is sent at once rather than held. */
const MAX_HELD = 100_000;

/**
 * The group path of a replica at position p > 0, as Alertmanager's wait stage: the replica flushes
 * its groups on the same ticks as the first (so it decides on the same alerts), but holds what the
 * flush would send for p × peer timeout; then it reads the cluster's notification log, and sends
 * only if no replica before it told the same since that tick. Deciding on a later tick instead
 * would tell news (a resolve) that the first replica tells only on its next tick: sent twice.
 */
export class HeldGroupMessages {
  private held: HeldFlush[] = [];
  /** Released by the step now running: put back should it fail (its sends never reached the outbox). */
  private releasing: HeldFlush[] = [];

  /** Holds a flush's sends (`dueAt`: when the group was due); returns what must go out at once (the hold is full, or nothing to hold). */
  hold(group: string, decisions: readonly Decision[], dueAt: number, now: number, waitMs: number): Decision[] {
    const sends = decisions.flatMap((d) => ('send' in d ? [d.send] : []));
    const rest = decisions.filter((d) => !('send' in d));
    if (sends.length === 0) return rest;
    if (this.held.length >= MAX_HELD) return [...decisions];
    this.held.push({ group, decidedAt: dueAt, sends, dueAt: now + waitMs });
    return rest;
  }

  /** The groups whose held flushes are due, for the caller to read their log entries first. */
  dueGroups(now: number): string[] {
    return [...new Set(this.held.filter((h) => h.dueAt <= now).map((h) => h.group))];
  }

  /**
   * What is due, judged against the cluster's log as just read: a flush that a replica before this
   * one told since its tick (every alert of it told as it says) is dropped; the rest is sent, and
   * the log entries to write for it returned with it.
   */
  release(now: number, entries: ReadonlyMap<string, NotificationLogEntry | undefined>): { decisions: Decision[]; logged: Map<string, NotificationLogEntry> } {
    const decisions: Decision[] = [];
    const logged = new Map<string, NotificationLogEntry>();
    const due = this.held.filter((h) => h.dueAt <= now);
    if (due.length === 0) return { decisions, logged };
    this.held = this.held.filter((h) => h.dueAt > now);
    this.releasing.push(...due);
    for (const h of due) {
      const entry = logged.get(h.group) ?? entries.get(h.group);
      if (entry && entry.lastSent >= h.decidedAt && h.sends.every((n) => told(entry, n))) continue;
      for (const send of h.sends) decisions.push({ send });
      const next: Record<string, Told> = Object.create(null) as Record<string, Told>;
      if (entry) for (const [fp, t] of Object.entries(entry.told)) next[fp] = t;
      for (const n of h.sends)
        for (const a of n.alerts) {
          if (a.status === 'firing') next[a.fingerprint] = { status: 'firing', severity: a.severity, at: h.decidedAt };
          else delete next[a.fingerprint];
        }
      // Later than what the log had: a replica that merges only newer entries takes this one.
      logged.set(h.group, { lastSent: Math.max(h.decidedAt, (entry?.lastSent ?? 0) + 1), told: next });
    }
    return { decisions, logged };
  }

  /** The step ended: what it released is in the outbox (`ok`), or goes back to be judged again at the next step. */
  settle(ok: boolean): void {
    if (!ok) this.held.unshift(...this.releasing);
    this.releasing = [];
  }
}

/** Whether the log says every alert of this message was told as the message tells it. */
function told(entry: NotificationLogEntry, n: Notification): boolean {
  return n.alerts.every((a) => {
    const t = Object.hasOwn(entry.told, a.fingerprint) ? entry.told[a.fingerprint] : undefined;
    return a.status === 'firing' ? t?.status === 'firing' && t.severity === a.severity : t === undefined;
  });
}
