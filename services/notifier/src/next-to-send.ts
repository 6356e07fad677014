import type { Notification } from '@gpualert/notify';
import { severityRank } from '@gpualert/schema';

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
export function nextToSend(queue: readonly { readonly notification: Notification; readonly queuedAt: number }[], now = Date.now()): number {
  // The messages no earlier one shares a group or an alert with are the ones that may go (heads);
  // each carries the urgency of the most urgent message held behind it, so a resolve that holds its
  // fault's next critical page goes as urgently as that page.
  const headsOf = new Map<string, Set<number>>();
  const urgencyOf = new Map<number, number>();
  /** An earlier head already raised to the most urgent by a message behind it: it goes first, as the earliest. */
  let earlierMostUrgent = false;
  const end = Math.min(queue.length, SEND_LOOKAHEAD);
  let looked = 0;
  for (let i = 0; i < end; i += 1) {
    const item = queue[i];
    if (!item) break;
    const { notification } = item;
    // The budget counts a message's alerts before reading them: one naming thousands ends the look (the first always may go).
    looked += 1 + notification.alerts.length;
    if (looked > SEND_LOOKAHEAD_KEYS) {
      if (i === 0) return 0;
      break;
    }
    const keys = [`group:${notification.group}`, ...notification.alerts.map((a) => `alert:${a.fingerprint}`)];
    const found = new Set<number>();
    for (const key of keys) for (const head of headsOf.get(key) ?? []) found.add(head);
    // What waited past SEND_MAX_WAIT_MS is as urgent as anything: a storm of pages does not hold a resolve back for ever.
    const u = now - item.queuedAt >= SEND_MAX_WAIT_MS ? MOST_URGENT : urgency(notification);
    if (found.size === 0) {
      // The first message that may go and is as urgent as any: nothing can pass it, and it goes.
      if (u >= MOST_URGENT && !earlierMostUrgent) return i;
      found.add(i);
      urgencyOf.set(i, u);
    } else {
      for (const head of found) urgencyOf.set(head, Math.max(urgencyOf.get(head) ?? -Infinity, u));
      if (u >= MOST_URGENT) earlierMostUrgent = true;
    }
    for (const key of keys) {
      let heads = headsOf.get(key);
      if (!heads) headsOf.set(key, (heads = new Set()));
      for (const head of found) heads.add(head);
    }
  }
  let best = 0;
  let bestUrgency = -Infinity;
  // Heads in queue order: the earliest of the most urgent.
  for (const [head, u] of urgencyOf) if (u > bestUrgency) [best, bestUrgency] = [head, u];
  return best;
}

function urgency(notification: Notification): number {
  if (notification.reason === 'resolved' || notification.reason === 'page_resolve' || notification.reason === 'repeat') return -1;
  let most = -1;
  for (const alert of notification.alerts) if (alert.status === 'firing') most = Math.max(most, severityRank(alert.severity));
  return most;
}
