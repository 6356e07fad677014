import type { AlertView, Notification } from '@gpualert/notify';
import type { Severity } from '@gpualert/schema';
import fc from 'fast-check';
import { severityRank } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { nextToSend, SEND_LOOKAHEAD, SEND_LOOKAHEAD_KEYS, SEND_MAX_WAIT_MS } from './next-to-send.ts';

const alert = (fingerprint: string, severity: Severity, status: AlertView['status'] = 'firing'): AlertView => ({
  id: `a-${fingerprint}`,
  fingerprint,
  host: `host-${fingerprint}`,
  status,
  severity,
  category: 'gpu',
  summary: fingerprint,
  startsAt: '2026-06-01T00:00:00Z',
  expected: false,
  evidence: [],
  labels: {},
});

const queued = (id: string, reason: Notification['reason'], alerts: AlertView[], group = `page:${alerts[0]?.fingerprint ?? id}`, queuedAt = 0) => ({
  notification: { id, receiver: 'pager', group, reason, alerts, firing: alerts.filter((a) => a.status === 'firing').length } satisfies Notification,
  queuedAt,
});

/** The order a receiver sends a queue in, one message at a time. */
function sendOrder(queue: ReturnType<typeof queued>[], now = 0): string[] {
  const rest = [...queue];
  const order: string[] = [];
  while (rest.length > 0) order.push(rest.splice(nextToSend(rest, now), 1)[0]!.notification.id);
  return order;
}

describe('the next message a receiver sends', () => {
  it('a critical page goes before the error pages of other faults queued ahead of it, which keep their order', () => {
    const errors = Array.from({ length: 20 }, (_, i) => queued(`error-${i}`, 'page', [alert(`f${i}`, 'error')]));
    const xid = queued('xid-79', 'page', [alert('xid', 'critical')]);
    expect(sendOrder([...errors, xid])).toEqual(['xid-79', ...errors.map((e) => e.notification.id)]);
  });

  it("a fault's own messages keep their order: its resolve never passes its trigger, nor a later trigger an earlier resolve of it", () => {
    const queue = [
      queued('warning-trigger', 'page', [alert('w', 'warning')]),
      queued('f-trigger', 'page', [alert('f', 'error')]),
      queued('f-resolve', 'page_resolve', [alert('f', 'error', 'resolved')]),
      queued('f-again', 'page', [alert('f', 'critical')]),
      queued('other-critical', 'page', [alert('o', 'critical')]),
    ];
    // f's resolve holds its next critical page behind it: f's three go as critical, first come first.
    expect(sendOrder(queue)).toEqual(['f-trigger', 'f-resolve', 'f-again', 'other-critical', 'warning-trigger']);
    // Without that page, f's resolve yields to the warning of another fault, which yields to f's trigger.
    expect(sendOrder(queue.filter((q) => q.notification.id !== 'f-again'))).toEqual(['other-critical', 'f-trigger', 'warning-trigger', 'f-resolve']);
  });

  it('a group keeps its order too, even for a more severe alert of it; equal urgency goes first come first', () => {
    const queue = [
      queued('g-first', 'first', [alert('a', 'warning')], 'team-a'),
      queued('g-new', 'new_alerts', [alert('b', 'critical')], 'team-a'),
      queued('h-first', 'first', [alert('c', 'warning')], 'team-b'),
      queued('h-more', 'new_alerts', [alert('d', 'warning')], 'team-c'),
    ];
    expect(sendOrder(queue)).toEqual(['g-first', 'g-new', 'h-first', 'h-more']);
  });

  it('resolves and repeats yield to what fires; nothing past the lookahead is looked at', () => {
    const queue = [
      queued('resolve', 'page_resolve', [alert('r', 'critical', 'resolved')]),
      queued('repeat', 'repeat', [alert('p', 'critical')]),
      queued('info', 'first', [alert('i', 'info')]),
    ];
    expect(sendOrder(queue)).toEqual(['info', 'resolve', 'repeat']);
    const long = [
      ...Array.from({ length: SEND_LOOKAHEAD }, (_, i) => queued(`w-${i}`, 'page', [alert(`w${i}`, 'warning')])),
      queued('late', 'page', [alert('late', 'critical')]),
    ];
    expect(nextToSend(long, 0)).toBe(0);
    expect(nextToSend(long.slice(1), 0)).toBe(SEND_LOOKAHEAD - 1);
    // A message naming more alerts than the lookahead reads ends the look there.
    const big = queued(
      'big',
      'first',
      Array.from({ length: SEND_LOOKAHEAD_KEYS }, (_, i) => alert(`b${i}`, 'warning')),
      'team-big',
    );
    expect(nextToSend([big, queued('after-big', 'page', [alert('x', 'critical')])], 0)).toBe(0);
    expect(nextToSend([queued('small', 'first', [alert('s', 'warning')], 'team-s'), queued('after-small', 'page', [alert('x', 'critical')])], 0)).toBe(1);
  });

  it('what waited past its bound goes first come first, urgent or not: a storm of pages does not hold a resolve back for ever', () => {
    const queue = [
      queued('old-resolve', 'page_resolve', [alert('r', 'error', 'resolved')], undefined, 0),
      queued('fresh-critical', 'page', [alert('c', 'critical')], undefined, SEND_MAX_WAIT_MS),
    ];
    expect(sendOrder(queue, SEND_MAX_WAIT_MS - 1)).toEqual(['fresh-critical', 'old-resolve']);
    expect(sendOrder(queue, SEND_MAX_WAIT_MS)).toEqual(['old-resolve', 'fresh-critical']);
  });
});

/**
 * The look as first written (before its no-allocation first pass and its separate group and alert
 * indexes): every message's groups and alerts as keys, a Set of heads each. The oracle below.
 */
function referenceNextToSend(queue: readonly ReturnType<typeof queued>[], now: number): number {
  const headsOf = new Map<string, Set<number>>();
  const urgencyOf = new Map<number, number>();
  let earlierMostUrgent = false;
  const most = severityRank('critical');
  const urgency = (n: Notification) => {
    if (n.reason === 'resolved' || n.reason === 'page_resolve' || n.reason === 'repeat') return -1;
    let u = -1;
    for (const a of n.alerts) if (a.status === 'firing') u = Math.max(u, severityRank(a.severity));
    return u;
  };
  let looked = 0;
  for (let i = 0; i < Math.min(queue.length, SEND_LOOKAHEAD); i += 1) {
    const item = queue[i]!;
    looked += 1 + item.notification.alerts.length;
    if (looked > SEND_LOOKAHEAD_KEYS) {
      if (i === 0) return 0;
      break;
    }
    const keys = [`group:${item.notification.group}`, ...item.notification.alerts.map((a) => `alert:${a.fingerprint}`)];
    const found = new Set<number>();
    for (const key of keys) for (const head of headsOf.get(key) ?? []) found.add(head);
    const u = now - item.queuedAt >= SEND_MAX_WAIT_MS ? most : urgency(item.notification);
    if (found.size === 0) {
      if (u >= most && !earlierMostUrgent) return i;
      found.add(i);
      urgencyOf.set(i, u);
    } else {
      for (const head of found) urgencyOf.set(head, Math.max(urgencyOf.get(head) ?? -Infinity, u));
      if (u >= most) earlierMostUrgent = true;
    }
    for (const key of keys) {
      let heads = headsOf.get(key);
      if (!heads) headsOf.set(key, (heads = new Set()));
      for (const head of found) heads.add(head);
    }
  }
  let best = 0;
  let bestUrgency = -Infinity;
  for (const [head, u] of urgencyOf) if (u > bestUrgency) [best, bestUrgency] = [head, u];
  return best;
}

describe('the next message, against the look as first written', () => {
  it('picks the same message for any queue of groups, faults, severities, reasons and ages', () => {
    const severities: Severity[] = ['info', 'warning', 'error', 'critical'];
    const reasons: Notification['reason'][] = ['first', 'new_alerts', 'changed', 'page', 'repeat', 'resolved', 'page_resolve'];
    const message = fc.record({
      group: fc.integer({ min: 0, max: 5 }),
      reason: fc.constantFrom(...reasons),
      queuedAt: fc.constantFrom(0, SEND_MAX_WAIT_MS / 2, SEND_MAX_WAIT_MS),
      alerts: fc.array(fc.record({ fault: fc.integer({ min: 0, max: 7 }), severity: fc.constantFrom(...severities), firing: fc.boolean() }), { maxLength: 4 }),
    });
    fc.assert(
      fc.property(fc.array(message, { maxLength: 40 }), fc.constantFrom(SEND_MAX_WAIT_MS, 2 * SEND_MAX_WAIT_MS - 1), (messages, now) => {
        const queue = messages.map((m, i) =>
          queued(
            `m${i}`,
            m.reason,
            m.alerts.map((a) => alert(`f${a.fault}`, a.severity, a.firing ? 'firing' : 'resolved')),
            `g${m.group}`,
            m.queuedAt,
          ),
        );
        // Sent one at a time to the end: the whole order, not only the first pick.
        const mine = [...queue];
        const theirs = [...queue];
        while (mine.length > 0) {
          const [a, b] = [nextToSend(mine, now), referenceNextToSend(theirs, now)];
          expect(mine[a]!.notification.id).toBe(theirs[b]!.notification.id);
          mine.splice(a, 1);
          theirs.splice(b, 1);
        }
      }),
      { numRuns: 500 },
    );
  });
});
