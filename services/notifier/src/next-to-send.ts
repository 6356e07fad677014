import type { Notification } from '@gpualert/notify';
import { must, severityRank } from '@gpualert/schema';

/**
 * How far into a receiver's queue the next message is looked for: a storm's queue of thousands costs
 * at most this many a send (at 10,000 GPUs the e2e bench's pager queue held 266 error pages ahead of
 * an Xid 79's; a lookahead of 256 did not see it).
 */
export const SEND_LOOKAHEAD = 2_048;
/** And at most this many groups and alerts of those messages (a group's message can name thousands). */
export const SEND_LOOKAHEAD_KEYS = 8_192;
/** A message queued this long ago goes as if it were critical: urgency orders a storm, it does not starve what is not urgent. */
export const SEND_MAX_WAIT_MS = 30_000;
const MOST_URGENT = severityRank('critical');

/**
 * Which of a receiver's queued messages goes next: the most urgent (the highest severity it fires;
 * a resolve or a repeat the least; a message holding a more urgent one of its fault behind it, as
 * urgent as that), the earliest of those, among the messages no earlier one shares a group or an
 * alert with. A fault's messages keep their order (its trigger before its resolve), and
 * what is equally urgent goes in the order it came; but a critical page does not wait behind twenty
 * error pages of other faults, sent one at a time (the e2e bench's Xid 79 waited 400-700 ms so).
 */
export function nextToSend(queue: readonly Queued[], now = Date.now()): number {
  const end = lookaheadEnd(queue);
  if (end <= 1) return 0;
  // Nothing in the look more urgent than the first message: every head's urgency is at most that,
  // so the first (a head, and the earliest) goes. A storm of equal messages ends here, with nothing
  // allocated: the full look below costs its Sets and Maps at every send.
  const first = urgencyAt(must(queue[0], 'a queue of more than one'), now);
  let most = first;
  for (let i = 1; i < end && most <= first; i += 1) most = Math.max(most, urgencyAt(must(queue[i], 'i < end <= length'), now));
  if (most <= first) return 0;
  return mostUrgentHead(queue, end, now);
}

type Queued = { readonly notification: Notification; readonly queuedAt: number };

/** How many of the queue's first messages the look takes: at most SEND_LOOKAHEAD messages, and as many as fit SEND_LOOKAHEAD_KEYS groups and alerts (the first always). */
function lookaheadEnd(queue: readonly Queued[]): number {
  const end = Math.min(queue.length, SEND_LOOKAHEAD);
  let looked = 0;
  for (let i = 0; i < end; i += 1) {
    // The budget counts a message's alerts before reading them: one naming thousands ends the look.
    looked += 1 + must(queue[i], 'i < end <= length').notification.alerts.length;
    if (looked > SEND_LOOKAHEAD_KEYS) return Math.max(1, i);
  }
  return end;
}

/** What waited past SEND_MAX_WAIT_MS is as urgent as anything: a storm of pages does not hold a resolve back for ever. */
function urgencyAt(item: Queued, now: number): number {
  return now - item.queuedAt >= SEND_MAX_WAIT_MS ? MOST_URGENT : urgency(item.notification);
}

/** The full look over the first `end` messages (nextToSend). */
function mostUrgentHead(queue: readonly Queued[], end: number, now: number): number {
  // The messages no earlier one shares a group or an alert with are the ones that may go (heads);
  // each carries the urgency of the most urgent message held behind it, so a resolve that holds its
  // fault's next critical page goes as urgently as that page. Groups and alerts are kept apart, so
  // no key is built.
  const groupHeads = new Map<string, Set<number>>();
  const alertHeads = new Map<string, Set<number>>();
  const urgencyOf = new Map<number, number>();
  /** An earlier head already raised to the most urgent by a message behind it: it goes first, as the earliest. */
  let earlierMostUrgent = false;
  const found = new Set<number>();
  for (let i = 0; i < end; i += 1) {
    const item = must(queue[i], 'i < end <= length');
    const { notification } = item;
    found.clear();
    for (const head of groupHeads.get(notification.group) ?? []) found.add(head);
    for (const alert of notification.alerts) for (const head of alertHeads.get(alert.fingerprint) ?? []) found.add(head);
    const u = urgencyAt(item, now);
    if (found.size === 0) {
      // The first message that may go and is as urgent as any: nothing can pass it, and it goes.
      if (u >= MOST_URGENT && !earlierMostUrgent) return i;
      found.add(i);
      urgencyOf.set(i, u);
    } else {
      for (const head of found) urgencyOf.set(head, Math.max(urgencyOf.get(head) ?? -Infinity, u));
      if (u >= MOST_URGENT) earlierMostUrgent = true;
    }
    addHeads(groupHeads, notification.group, found);
    for (const alert of notification.alerts) addHeads(alertHeads, alert.fingerprint, found);
  }
  let best = 0;
  let bestUrgency = -Infinity;
  // Heads in queue order: the earliest of the most urgent.
  for (const [head, u] of urgencyOf) if (u > bestUrgency) [best, bestUrgency] = [head, u];
  return best;
}

function addHeads(index: Map<string, Set<number>>, key: string, heads: ReadonlySet<number>): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  for (const head of heads) set.add(head);
}

function urgency(notification: Notification): number {
  if (notification.reason === 'resolved' || notification.reason === 'page_resolve' || notification.reason === 'repeat') return -1;
  let most = -1;
  for (const alert of notification.alerts) if (alert.status === 'firing') most = Math.max(most, severityRank(alert.severity));
  return most;
}
