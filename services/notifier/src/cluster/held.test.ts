import { dict, emptyNotifierState, type AlertView, type Decision, type Notification } from '@gpualert/notify';
import { describe, expect, it } from 'vitest';
import { DeferredPages } from './deferred-pages.ts';
import { HeldGroupMessages } from './held-group-messages.ts';

const T = 1_800_000_000_000;
const alert = (fingerprint: string, status: 'firing' | 'resolved' = 'firing'): AlertView => ({
  id: `${fingerprint}-${status}`,
  fingerprint,
  host: 'h1',
  status,
  severity: 'critical',
  category: 'xid',
  summary: 's',
  startsAt: new Date(T).toISOString(),
  expected: false,
  evidence: [],
  labels: dict([['host', 'h1']]),
});
const send = (reason: Notification['reason'], a: AlertView, receiver = 'pd'): Decision => ({
  send: {
    id: `${reason}-${a.fingerprint}-${receiver}`,
    receiver,
    group: `page:${a.fingerprint}`,
    reason,
    alerts: [a],
    firing: 1,
    alertmanager: { receiver: 'pd', groupLabels: {}, alerts: [a] },
  },
});

describe('a replica after the first holds its pages', () => {
  it('for its wait, with the page log as it was; then sends only what nobody paged, and only while the fault fires here', () => {
    const state = emptyNotifierState();
    const held = new DeferredPages();
    // The core paged three faults and wrote them to state.pages; the replica holds them instead.
    for (const fp of ['a', 'b', 'c']) {
      state.pages[`pd|${fp}`] = { status: 'firing', severity: 'critical', at: T };
      state.firing[fp] = dict();
    }
    const rest = held.hold(
      state,
      [send('page', alert('a')), send('page', alert('b')), send('page', alert('c')), send('page', alert('a'), 'pd-2')],
      new Map(),
      T,
      2_000,
    );
    expect(rest).toEqual([]);
    expect(Object.keys(state.pages)).toEqual([]); // the shared log must not say paged before anybody did
    expect(held.dueFingerprints(T + 1_999)).toEqual([]);
    expect(held.release(state, T + 1_999)).toEqual([]);
    // By then another replica paged b, and c resolved here.
    state.pages['pd|b'] = { status: 'firing', severity: 'critical', at: T + 5 };
    delete state.firing.c;
    expect(held.dueFingerprints(T + 2_000).sort()).toEqual(['a', 'b', 'c']);
    const out = held.release(state, T + 2_000);
    expect(out.map((d) => ('send' in d ? d.send.id : ''))).toEqual(['page-a-pd', 'page-a-pd-2']);
    expect(state.pages['pd|a']?.status).toBe('firing');
    expect(held.size).toBe(0);
  });

  it('sends a held resolve only while the log still says paged (nobody before it resolved)', () => {
    const state = emptyNotifierState();
    const held = new DeferredPages();
    const before = new Map([
      ['pd|x', { status: 'firing' as const, severity: 'critical' as const, at: T }],
      ['pd|y', { status: 'firing' as const, severity: 'critical' as const, at: T }],
    ]);
    // What the core wrote deciding the resolves: remembered as resolved when they were published.
    for (const fp of ['x', 'y']) state.pages[`pd|${fp}`] = { status: 'resolved', severity: 'critical', at: T };
    held.hold(state, [send('page_resolve', alert('x', 'resolved')), send('page_resolve', alert('y', 'resolved'))], before, T + 200, 1_000);
    expect(state.pages['pd|x']?.status).toBe('firing'); // put back as it was
    state.pages['pd|y'] = { status: 'resolved', severity: 'critical', at: T + 500 }; // the first replica resolved y
    expect(held.release(state, T + 1_200).map((d) => ('send' in d ? d.send.id : ''))).toEqual(['page_resolve-x-pd']);
    // Remembered as resolved, as the core decided it (a backlog's old firing of x is old news).
    expect(state.pages['pd|x']).toEqual({ status: 'resolved', severity: 'critical', at: T });
  });
});

describe('held pages, against a fault that comes back or a step that fails', () => {
  it('a held resolve is dropped when the fault pages again, or fires here again, before it is due: it would close a firing incident', () => {
    const state = emptyNotifierState();
    const held = new DeferredPages();
    const paged = new Map([['pd|z', { status: 'firing' as const, severity: 'critical' as const, at: T }]]);
    held.hold(state, [send('page_resolve', alert('z', 'resolved'))], paged, T, 1_000);
    held.hold(state, [send('page', alert('z'))], paged, T + 10, 1_000);
    state.firing.z = dict();
    expect(held.release(state, T + 2_000)).toEqual([]); // the page: the log says paged; the resolve: gone
    expect(held.size).toBe(0);
    held.hold(state, [send('page_resolve', alert('z', 'resolved'))], paged, T + 3_000, 1_000);
    state.pages['pd|z'] = { status: 'firing', severity: 'critical', at: T };
    expect(held.release(state, T + 4_000)).toEqual([]); // it fires here again: old news
  });

  it('what a failed step released is held again and judged at the next step; what a step that succeeded released is gone', () => {
    const state = emptyNotifierState();
    const held = new DeferredPages();
    state.firing.a = dict();
    held.hold(state, [send('page', alert('a'))], new Map(), T, 1_000);
    expect(held.release(state, T + 1_000)).toHaveLength(1);
    held.settle(false);
    delete state.pages['pd|a']; // the state rolled back with the step
    expect(held.release(state, T + 1_001)).toHaveLength(1);
    held.settle(true);
    expect(held.size).toBe(0);
    const groups = new HeldGroupMessages();
    groups.hold('g', [{ send: { id: 'm', receiver: 'chat', group: 'g', reason: 'first', alerts: [alert('a')], firing: 1 } }], T, T, 1_000);
    expect(groups.release(T + 1_000, new Map()).decisions).toHaveLength(1);
    groups.settle(false);
    expect(groups.release(T + 1_001, new Map()).decisions).toHaveLength(1);
    groups.settle(true);
    expect(groups.dueGroups(T + 5_000)).toEqual([]);
  });
});

describe('a replica after the first holds its group messages', () => {
  const message = (alerts: AlertView[]): Decision => ({ send: { id: 'm', receiver: 'chat', group: 'g', reason: 'first', alerts, firing: alerts.length } });

  it('and drops one the cluster log shows told since the flush it was decided at; sends one it does not, with the log entry to write', () => {
    const held = new HeldGroupMessages();
    expect(held.hold('g', [message([alert('a'), alert('b')])], T, T + 50, 3_000)).toEqual([]);
    expect(held.hold('h', [message([alert('c')])], T, T + 50, 3_000)).toEqual([]);
    expect(held.dueGroups(T + 3_049)).toEqual([]);
    const told = { status: 'firing' as const, severity: 'critical' as const, at: T };
    const entries = new Map([
      [
        'g',
        {
          lastSent: T + 20,
          told: dict([
            ['a', told],
            ['b', told],
          ]),
        },
      ],
      // h's entry is from the flush before: its message was not told.
      ['h', { lastSent: T - 60_000, told: dict<typeof told>() }],
    ]);
    const { decisions, logged } = held.release(T + 3_050, entries);
    expect(decisions).toHaveLength(1);
    expect([...logged.keys()]).toEqual(['h']);
    expect(logged.get('h')).toMatchObject({ lastSent: T, told: { c: { status: 'firing' } } });
  });

  it('sends a resolve the log still shows firing, and logs the alert as no longer told', () => {
    const held = new HeldGroupMessages();
    held.hold('g', [message([alert('a', 'resolved')])], T, T, 1_000);
    const told = { status: 'firing' as const, severity: 'critical' as const, at: T - 10 };
    const { decisions, logged } = held.release(T + 1_000, new Map([['g', { lastSent: T - 10, told: dict([['a', told]]) }]]));
    expect(decisions).toHaveLength(1);
    expect(Object.keys(logged.get('g')?.told ?? {})).toEqual([]);
  });
});
