import type { Notification } from '@gpualert/notify';
import { severityRank } from '@gpualert/schema';

/** How far into a receiver's queue the next message is looked for: a storm's queue of thousands costs at most this many a send. */
export const SEND_LOOKAHEAD = 256;
/** And at most this many groups and alerts of those messages (a group's message can name thousands). */
export const SEND_LOOKAHEAD_KEYS = 4_096;

/**
 * Which of a receiver's queued messages goes next: the most urgent (the highest severity it fires;
 * a resolve or a repeat the least; a message holding a more urgent one of its fault behind it, as
 * urgent as that), the earliest of those, among the messages no earlier one shares a group or an
 * alert with. A fault's messages keep their order (its trigger before its resolve), and
 * what is equally urgent goes in the order it came; but a critical page does not wait behind twenty
 * error pages of other faults, sent one at a time (the e2e bench's Xid 79 waited 400-700 ms so).
 */
export function nextToSend(queue: readonly { readonly notification: Notification }[]): number {
  // The messages no earlier one shares a group or an alert with are the ones that may go (heads);
  // each carries the urgency of the most urgent message held behind it, so a resolve that holds its
  // fault's next critical page goes as urgently as that page.
  const headsOf = new Map<string, readonly number[]>();
  const urgencyOf = new Map<number, number>();
  const end = Math.min(queue.length, SEND_LOOKAHEAD);
  let looked = 0;
  for (let i = 0; i < end && looked < SEND_LOOKAHEAD_KEYS; i += 1) {
    const item = queue[i];
    if (!item) break;
    const { notification } = item;
    const keys = [`group:${notification.group}`, ...notification.alerts.map((a) => `alert:${a.fingerprint}`)];
    looked += keys.length;
    const found = new Set<number>();
    for (const key of keys) for (const head of headsOf.get(key) ?? []) found.add(head);
    const u = urgency(notification);
    if (found.size === 0) {
      found.add(i);
      urgencyOf.set(i, u);
    } else {
      for (const head of found) urgencyOf.set(head, Math.max(urgencyOf.get(head) ?? -Infinity, u));
    }
    for (const key of keys) headsOf.set(key, [...new Set([...(headsOf.get(key) ?? []), ...found])]);
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
