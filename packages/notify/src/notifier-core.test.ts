import { newEnvelope, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { loadRoutes } from './load-routes.ts';
import { RoutesFile } from './route-config.ts';
import { emptyNotifierState, MAINTENANCE_MARGIN_MS, MAINTENANCE_MAX_HOLD_MS, NotifierCore, type Decision, type NotifierState } from './notifier-core.ts';
import { forgetResolvedPages } from './resolved-pages.ts';

const routes = loadRoutes();
if (!routes.ok) throw new Error(JSON.stringify(routes.errors));
const T = Date.parse('2026-06-01T00:00:00Z');
const S = 1_000;

function alert(
  fingerprint: string,
  status: 'firing' | 'resolved',
  severity: AlertData['severity'],
  extra: Partial<AlertData> & { host?: string; at?: number } = {},
): EnvelopeOf<'alert'> {
  const { host = 'h1', at = T, ...data } = extra;
  return newEnvelope({
    type: 'alert',
    id: `${fingerprint}-${status}-${severity}-${at}`,
    host,
    source: 'test',
    ts: new Date(at).toISOString(),
    labels: { cluster: 'lab' },
    data: {
      fingerprint,
      status,
      severity,
      category: 'thermal',
      rule: 'r',
      summary: `${fingerprint} ${status}`,
      starts_at: new Date(T).toISOString(),
      evidence: [],
      ...data,
    },
  });
}

const sent = (decisions: Decision[]) =>
  decisions.flatMap((d) => ('send' in d ? [[d.send.receiver, d.send.reason, d.send.alerts.map((a) => `${a.fingerprint}:${a.status}`).join(',')]] : []));
const suppressed = (decisions: Decision[]) => decisions.flatMap((d) => ('suppressed' in d ? [[d.suppressed.receiver, d.suppressed.reason]] : []));

describe('notifier decisions with the default routes', () => {
  const core = () => new NotifierCore(routes.ok ? routes.value : (undefined as never));

  it('groups chat by host and category after group_wait, then sends only what is new', () => {
    const n = core();
    const state: NotifierState = emptyNotifierState();
    expect(sent(n.ingest(state, alert('a', 'firing', 'warning'), T))).toEqual([]);
    expect(sent(n.ingest(state, alert('b', 'firing', 'warning'), T + 5 * S))).toEqual([]);
    expect(sent(n.flush(state, T + 29 * S))).toEqual([]);
    expect(sent(n.flush(state, T + 30 * S))).toEqual([['chat', 'first', 'a:firing,b:firing']]);
    n.ingest(state, alert('c', 'firing', 'warning'), T + 60 * S);
    expect(sent(n.flush(state, T + 100 * S))).toEqual([]); // group_interval not over
    expect(sent(n.flush(state, T + 330 * S))).toEqual([['chat', 'new_alerts', 'c:firing']]);
  });

  it('pages per fault: a second fault in the same group pages again, and each resolves', () => {
    const n = core();
    const state = emptyNotifierState();
    expect(sent(n.ingest(state, alert('gpu3', 'firing', 'critical'), T))).toEqual([['pager', 'page', 'gpu3:firing']]);
    expect(sent(n.ingest(state, alert('gpu5', 'firing', 'critical'), T + S))).toEqual([['pager', 'page', 'gpu5:firing']]);
    expect(sent(n.ingest(state, alert('gpu3', 'firing', 'critical'), T + 2 * S))).toEqual([]); // the same again does not
    // the chat digest is not held back by group_wait for a critical alert
    expect(sent(n.flush(state, T + 2 * S))).toEqual([['chat', 'first', 'gpu3:firing,gpu5:firing']]);
    expect(sent(n.ingest(state, alert('gpu3', 'resolved', 'critical'), T + 60 * S))).toEqual([['pager', 'page_resolve', 'gpu3:resolved']]);
  });

  it('a firing read before the resolve the pager was told, on the same partition, is old news (a replica behind, reading a backlog); one read after pages again', () => {
    const n = core();
    const state = emptyNotifierState();
    // Another replica paged and resolved x: the shared page log says resolved by the alert at offset 20 of partition 3.
    const episode = new Date(T).toISOString();
    state.pages['pager|x'] = { status: 'resolved', severity: 'critical', at: T + 10 * S, partition: 3, offset: 20, episode };
    expect(sent(n.ingest(state, alert('x', 'firing', 'critical'), T, { partition: 3, offset: 12 }))).toEqual([]);
    expect(sent(n.ingest(state, alert('x', 'resolved', 'critical'), T + 10 * S, { partition: 3, offset: 20 }))).toEqual([]);
    // The same fault again, read after the resolve: a new page, whatever its clock says.
    expect(sent(n.ingest(state, alert('x', 'firing', 'critical'), T, { partition: 3, offset: 21 }))).toEqual([['pager', 'page', 'x:firing']]);
    // Without the resolve's record, the backlog's old firing would page: what the record prevents.
    const forgot = emptyNotifierState();
    expect(sent(n.ingest(forgot, alert('x', 'firing', 'critical'), T, { partition: 3, offset: 12 }))).toEqual([['pager', 'page', 'x:firing']]);
    // Read elsewhere (the topic repartitioned) or with no position: not ordered, so paged (a duplicate at worst, never a loss).
    const moved = emptyNotifierState();
    moved.pages['pager|x'] = { status: 'resolved', severity: 'critical', at: T + 10 * S, partition: 3, offset: 20, episode };
    expect(sent(n.ingest(moved, alert('x', 'firing', 'critical'), T, { partition: 4, offset: 2 }))).toEqual([['pager', 'page', 'x:firing']]);
    // A new episode at a lower offset (the topic recreated, its offsets from 0 again): paged.
    const recreated = emptyNotifierState();
    recreated.pages['pager|x'] = { status: 'resolved', severity: 'critical', at: T + 10 * S, partition: 3, offset: 20, episode };
    const again = alert('x', 'firing', 'critical', { starts_at: new Date(T + 60 * S).toISOString() });
    expect(sent(n.ingest(recreated, again, T + 60 * S, { partition: 3, offset: 1 }))).toEqual([['pager', 'page', 'x:firing']]);
  });

  it('remembers where a page was resolved', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('y', 'firing', 'critical'), T, { partition: 1, offset: 5 });
    n.ingest(state, alert('y', 'resolved', 'critical'), T + S, { partition: 1, offset: 9 });
    expect(state.pages['pager|y']).toEqual({
      status: 'resolved',
      severity: 'critical',
      at: T + S,
      partition: 1,
      offset: 9,
      episode: new Date(T).toISOString(),
    });
  });

  it('forgets a page resolve an hour after it was told, never a firing page', () => {
    const state = emptyNotifierState();
    state.pages['pager|old'] = { status: 'resolved', severity: 'critical', at: T };
    state.pages['pager|recent'] = { status: 'resolved', severity: 'critical', at: T + 30 * 60 * S };
    state.pages['pager|open'] = { status: 'firing', severity: 'critical', at: T };
    expect(forgetResolvedPages(state, T + 61 * 60 * S)).toBe(1);
    expect(Object.keys(state.pages).sort()).toEqual(['pager|open', 'pager|recent']);
  });

  it('never pages for an alert a maintenance window explains, but tells chat', () => {
    const n = core();
    const state = emptyNotifierState();
    expect(sent(n.ingest(state, alert('down', 'firing', 'critical', { expected: true, category: 'host_down' }), T))).toEqual([]);
    expect(sent(n.flush(state, T))).toEqual([['chat', 'first', 'down:firing']]);
  });

  it('always resolves what was sent, even when a silence came in between', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('x', 'firing', 'critical'), T);
    n.flush(state, T);
    n.addSilence(state, { id: 's1', matchers: ['host="h1"'], startsAt: T + S, endsAt: T + 3_600 * S, createdBy: 'ana', comment: 'swapping the GPU' });
    const resolved = n.ingest(state, alert('x', 'resolved', 'critical'), T + 10 * S);
    expect(sent(resolved)).toEqual([['pager', 'page_resolve', 'x:resolved']]);
    expect(sent(n.flush(state, T + 400 * S))).toEqual([['chat', 'resolved', 'x:resolved']]);
    // while a new firing alert under the silence is only recorded as suppressed
    const silenced = n.ingest(state, alert('y', 'firing', 'critical'), T + 500 * S);
    expect(sent(silenced)).toEqual([]);
    expect(suppressed(silenced)).toEqual([
      ['pager', 'silenced'],
      ['chat', 'silenced'],
    ]);
  });

  it('inhibits what a lost GPU explains', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('lost', 'firing', 'critical', { category: 'fallen_off_bus' }), T);
    const collector = n.ingest(state, alert('smi', 'firing', 'error', { category: 'collector' }), T + S);
    expect(suppressed(collector)).toEqual([
      ['chat', 'inhibited'],
      ['ticket', 'inhibited'],
    ]);
    const otherHost = n.ingest(state, alert('smi2', 'firing', 'error', { category: 'collector', host: 'h2' }), T + S);
    expect(suppressed(otherHost)).toEqual([]);
  });

  it('repeats after repeat_interval with what still fires, and opens a ticket for errors', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('e', 'firing', 'error'), T);
    expect(sent(n.flush(state, T + 30 * S))).toEqual([
      ['chat', 'first', 'e:firing'],
      ['ticket', 'first', 'e:firing'],
    ]);
    expect(sent(n.flush(state, T + 3_600 * S))).toEqual([]);
    expect(sent(n.flush(state, T + 4 * 3_600 * S + 30 * S))).toEqual([
      ['chat', 'repeat', 'e:firing'],
      ['ticket', 'repeat', 'e:firing'],
    ]);
  });

  it('a maintenance window silences its host for the pager until it resolves; chat still hears', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('maint', 'firing', 'warning', { category: 'maintenance' }), T);
    expect(Object.values(state.silences).map((s) => [s.matchers, s.receivers])).toEqual([[['host="h1"'], ['pager']]]);
    const lost = n.ingest(state, alert('lost', 'firing', 'critical', { category: 'fallen_off_bus' }), T + S);
    expect(suppressed(lost)).toEqual([['pager', 'silenced']]);
    expect(sent(n.flush(state, T + S))).toEqual([['chat', 'first', 'lost:firing']]); // the critical one without group_wait
    n.ingest(state, alert('maint', 'resolved', 'warning', { category: 'maintenance' }), T + 60 * S);
    expect(Object.values(state.silences)[0]!.expiredAt).toBe(T + 60 * S);
    expect(sent(n.ingest(state, alert('lost2', 'firing', 'critical', { category: 'fallen_off_bus' }), T + 61 * S))).toEqual([
      ['pager', 'page', 'lost2:firing'],
    ]);
  });

  it("a maintenance window's silence holds the pager from the window's start to its end, 15 min either side, not from the notice for a week", () => {
    const n = core();
    const state = emptyNotifierState();
    const H = 3_600 * S;
    // The notice arrives at 02:03 for a window 03:00–05:00.
    const window = { start: new Date(T + 3 * H).toISOString(), end: new Date(T + 5 * H).toISOString() };
    n.ingest(state, alert('maint', 'firing', 'warning', { category: 'maintenance', window }), T + 2 * H + 3 * 60 * S);
    const silence = state.silences['maintenance-maint']!;
    expect([silence.startsAt, silence.endsAt, silence.receivers]).toEqual([T + 3 * H - MAINTENANCE_MARGIN_MS, T + 5 * H + MAINTENANCE_MARGIN_MS, ['pager']]);
    expect(silence.comment).toMatch(/^provider maintenance, pager receivers only \(pager\), held \S+ – \S+ \(the window .* 15 min either side\)/);
    // Before the window, a lost GPU pages; inside it, the pager is held and the API lists the silence; after it, it pages again.
    const lost = (fp: string, at: number) => n.ingest(state, alert(fp, 'firing', 'critical', { category: 'fallen_off_bus', at }), at);
    expect(sent(lost('before', T + 2 * H + 30 * 60 * S))).toEqual([['pager', 'page', 'before:firing']]);
    expect(suppressed(lost('inside', T + 4 * H))).toEqual([['pager', 'silenced']]);
    expect(n.markers(state, 'inside', state.firing.inside!, T + 4 * H, ['pager', 'chat']).silencedBy).toEqual(['maintenance-maint']);
    // An alert that goes to chat only is not held by a silence for the pager.
    expect(n.markers(state, 'inside', state.firing.inside!, T + 4 * H, ['chat']).silencedBy).toEqual([]);
    expect(sent(lost('after', T + 5 * H + 16 * 60 * S))).toEqual([['pager', 'page', 'after:firing']]);
    // The provider moves the window: the silence moves with it.
    const moved = { start: new Date(T + 7 * H).toISOString(), end: new Date(T + 8 * H).toISOString() };
    n.ingest(state, alert('maint', 'firing', 'warning', { category: 'maintenance', window: moved }), T + 6 * H);
    expect([state.silences['maintenance-maint']!.startsAt, state.silences['maintenance-maint']!.endsAt]).toEqual([
      T + 7 * H - MAINTENANCE_MARGIN_MS,
      T + 8 * H + MAINTENANCE_MARGIN_MS,
    ]);
  });

  it('a window already over when its notice is read (read late, a recording replayed) makes no silence; one moved into the past ends its silence', () => {
    const n = core();
    const state = emptyNotifierState();
    const H = 3_600 * S;
    const past = { start: new Date(T - 3 * H).toISOString(), end: new Date(T - H).toISOString() };
    n.ingest(state, alert('old', 'firing', 'warning', { category: 'maintenance', window: past }), T);
    expect(Object.keys(state.silences)).toEqual([]);
    n.ingest(state, alert('m', 'firing', 'warning', { category: 'maintenance', window: { start: new Date(T + H).toISOString() } }), T);
    expect(state.silences['maintenance-m']!.expiredAt).toBeUndefined();
    n.ingest(state, alert('m', 'firing', 'warning', { category: 'maintenance', window: past }), T + S);
    expect(state.silences['maintenance-m']!.expiredAt).toBe(T + S);
    // Only an end, already past; an end before its start: no week-long hold from now, nothing held.
    n.ingest(state, alert('ended', 'firing', 'warning', { category: 'maintenance', window: { end: new Date(T - H).toISOString() } }), T);
    n.ingest(
      state,
      alert('inverted', 'firing', 'warning', {
        category: 'maintenance',
        window: { start: new Date(T + 2 * H).toISOString(), end: new Date(T + H).toISOString() },
      }),
      T,
    );
    expect(Object.keys(state.silences).sort()).toEqual(['maintenance-m']);
    expect(sent(n.ingest(state, alert('lost', 'firing', 'critical', { category: 'fallen_off_bus' }), T + 2 * S))).toEqual([['pager', 'page', 'lost:firing']]);
    // Only an end, ahead: held from the notice to it.
    n.ingest(state, alert('soon', 'firing', 'warning', { category: 'maintenance', window: { end: new Date(T + H).toISOString() } }), T);
    expect([state.silences['maintenance-soon']!.startsAt, state.silences['maintenance-soon']!.endsAt]).toEqual([T, T + H + MAINTENANCE_MARGIN_MS]);
  });

  it('a window announced without times is held from the notice until it resolves, at most a week', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('maint', 'firing', 'warning', { category: 'maintenance' }), T);
    expect([state.silences['maintenance-maint']!.startsAt, state.silences['maintenance-maint']!.endsAt]).toEqual([T, T + MAINTENANCE_MAX_HOLD_MS]);
    expect(state.silences['maintenance-maint']!.comment).toMatch(/no window announced: until it resolves/);
    // Said again (an escalation), it stays as it was.
    n.ingest(state, alert('maint', 'firing', 'warning', { category: 'maintenance' }), T + 60 * S);
    expect(state.silences['maintenance-maint']!.startsAt).toBe(T);
  });

  it('mutes a route inside its mute time interval', () => {
    const routesWithMute = loadRoutes();
    if (!routesWithMute.ok) throw new Error('routes');
    const config = {
      ...routesWithMute.value,
      time_intervals: [
        {
          name: 'weekend',
          time_intervals: [
            {
              weekdays: [
                { begin: 6, end: 6 },
                { begin: 0, end: 0 },
              ],
            },
          ],
        },
      ],
    };
    config.route = { ...config.route, routes: config.route.routes.map((r) => (r.receiver === 'chat' ? { ...r, mute_time_intervals: ['weekend'] } : r)) };
    const n = new NotifierCore(config);
    const state = emptyNotifierState();
    const saturday = Date.parse('2026-06-06T12:00:00Z');
    expect(suppressed(n.ingest(state, alert('w', 'firing', 'warning'), saturday))).toEqual([['chat', 'muted']]);
    const monday = Date.parse('2026-06-08T12:00:00Z');
    n.ingest(state, alert('m', 'firing', 'warning'), monday);
    // Still firing when the mute ends: told then, with the new one, as Alertmanager does.
    expect(sent(n.flush(state, monday + 30 * S))).toEqual([['chat', 'first', 'w:firing,m:firing']]);
  });

  it('tells an alert held back by an inhibition once its source resolves, without waiting for its next push', () => {
    const config = RoutesFile.parse({
      receivers: [{ name: 'ops', webhook_configs: [{ url: 'http://127.0.0.1:9/ops' }] }],
      route: { receiver: 'ops', group_by: ['host'], group_wait: '1s', group_interval: '1s' },
      inhibit_rules: [{ source_matchers: ['severity="critical"'], target_matchers: ['severity="warning"'], equal: ['host'] }],
    });
    const n = new NotifierCore(config);
    const state = emptyNotifierState();
    n.ingest(state, alert('down', 'firing', 'critical'), T);
    expect(suppressed(n.ingest(state, alert('hot', 'firing', 'warning'), T))).toEqual([['ops', 'inhibited']]);
    expect(sent(n.flush(state, T + 2 * S))).toEqual([['ops', 'first', 'down:firing']]);
    n.ingest(state, alert('down', 'resolved', 'critical', { at: T + 3 * S }), T + 3 * S);
    expect(sent(n.flush(state, T + 4 * S))).toEqual([['ops', 'new_alerts', 'down:resolved,hot:firing']]);
  });

  it('sends a flapping alert once, as the engine reports it', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('f|flapping', 'firing', 'error', { rule: 'flapping', summary: 'flapping: GPU 1 hw slowdown' }), T);
    expect(sent(n.flush(state, T + 30 * S))).toEqual([
      ['chat', 'first', 'f|flapping:firing'],
      ['ticket', 'first', 'f|flapping:firing'],
    ]);
    expect(sent(n.flush(state, T + 400 * S))).toEqual([]);
  });

  it('records info without sending it anywhere', () => {
    const n = core();
    const state = emptyNotifierState();
    n.ingest(state, alert('i', 'firing', 'info'), T);
    expect(sent(n.flush(state, T + 30 * S))).toEqual([['record', 'first', 'i:firing']]);
  });
});

describe('a reload: a new core adopts the state the old one built', () => {
  const first = RoutesFile.parse({
    receivers: [
      { name: 'chat', channel: 'record' },
      { name: 'gpu-team', channel: 'record' },
    ],
    route: { receiver: 'chat', group_by: ['host'], group_wait: '30s', group_interval: '5m', repeat_interval: '4h' },
  });
  const second = RoutesFile.parse({
    receivers: [
      { name: 'chat', channel: 'record' },
      { name: 'gpu-team', channel: 'record' },
    ],
    route: {
      receiver: 'chat',
      group_by: ['host'],
      group_wait: '30s',
      group_interval: '5m',
      repeat_interval: '4h',
      routes: [{ receiver: 'gpu-team', matchers: ['host="h1"'] }],
    },
    inhibit_rules: [{ source_matchers: ['severity="critical"'], target_matchers: ['severity="warning"'], equal: ['host'] }],
  });

  it('keeps what an unchanged group told and its timers, tells a moved alert to its new receiver after group_wait, and indexes the new inhibit rules', async () => {
    const before = new NotifierCore(first);
    const state = emptyNotifierState();
    before.ingest(state, alert('a', 'firing', 'warning', { host: 'h1' }), T);
    before.ingest(state, alert('b', 'firing', 'warning', { host: 'h2' }), T);
    before.ingest(state, alert('c', 'firing', 'critical', { host: 'h2' }), T);
    expect(sent(before.flush(state, T + 30 * S))).toEqual([
      ['chat', 'first', 'a:firing'],
      ['chat', 'first', 'b:firing,c:firing'],
    ]);
    expect(before.markers(state, 'b', state.firing.b!, T + 30 * S).inhibitedBy).toEqual([]); // no rule yet
    const h2 = state.groups['root|chat|host="h2"']!;
    const told = h2.told.b;

    const after = new NotifierCore(second);
    const reloadAt = T + 60 * S;
    expect(await after.adopt(state, reloadAt)).toEqual({ kept: 2, moved: 1, groups: 2 });
    expect(Object.keys(state.groups).sort()).toEqual(['root.0|gpu-team|host="h1"', 'root|chat|host="h2"']);
    // h2's group is as it was: the same told record, the same next flush; nothing is news.
    expect(state.groups['root|chat|host="h2"']!.told.b).toBe(told);
    expect(state.groups['root|chat|host="h2"']!.nextFlush).toBe(h2.nextFlush);
    expect(sent(after.flush(state, reloadAt + 29 * S))).toEqual([]);
    expect(sent(after.flush(state, reloadAt + 30 * S))).toEqual([['gpu-team', 'first', 'a:firing']]);
    // The new rule's index holds what fired before the reload: the critical alert inhibits its host's warning.
    expect(after.markers(state, 'b', state.firing.b!, reloadAt + 40 * S).inhibitedBy).toEqual(['c']);
  });

  it('a route inserted above a group (its place in the file moves) keeps the group: nothing is told again, its resolve still goes out', async () => {
    const one = RoutesFile.parse({
      receivers: [
        { name: 'chat', channel: 'record' },
        { name: 'gpu-team', channel: 'record' },
        { name: 'db', channel: 'record' },
      ],
      route: {
        receiver: 'chat',
        group_by: ['host'],
        group_wait: '30s',
        group_interval: '5m',
        repeat_interval: '4h',
        routes: [{ receiver: 'gpu-team', matchers: ['host="h1"'] }],
      },
    });
    const two = RoutesFile.parse({
      receivers: [
        { name: 'chat', channel: 'record' },
        { name: 'gpu-team', channel: 'record' },
        { name: 'db', channel: 'record' },
      ],
      route: {
        receiver: 'chat',
        group_by: ['host'],
        group_wait: '30s',
        group_interval: '5m',
        repeat_interval: '4h',
        routes: [
          { receiver: 'db', matchers: ['host="zzz"'] },
          { receiver: 'gpu-team', matchers: ['host="h1"'] },
        ],
      },
    });
    const before = new NotifierCore(one);
    const state = emptyNotifierState();
    before.ingest(state, alert('a', 'firing', 'warning', { host: 'h1' }), T);
    expect(sent(before.flush(state, T + 30 * S))).toEqual([['gpu-team', 'first', 'a:firing']]);
    before.ingest(state, alert('a', 'resolved', 'warning', { host: 'h1', at: T + 60 * S }), T + 60 * S);
    const after = new NotifierCore(two);
    expect(await after.adopt(state, T + 61 * S)).toEqual({ kept: 1, moved: 0, groups: 1 });
    expect(Object.keys(state.groups)).toEqual(['root.1|gpu-team|host="h1"']);
    expect(sent(after.flush(state, T + 400 * S))).toEqual([['gpu-team', 'resolved', 'a:resolved']]);
  });
});
