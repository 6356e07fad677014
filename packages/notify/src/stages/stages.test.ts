import { describe, expect, it } from 'vitest';
import { dict, emptyNotifierState, type AlertView, type NotifierState } from '../notifier-core.ts';
import { RoutesFile } from '../route-config.ts';
import { routesFor } from '../routing.ts';
import { SilenceIndex } from '../silence-index.ts';
import { parseMatchers, type Matcher } from '../matchers.ts';
import { dedup, due, recordSent, settle, view } from './group-stages.ts';
import { Inhibitor } from './inhibitor.ts';
import { activeTimeStage, held, inhibitStage, MUTE_ORDER, muteTimeStage, silenceStage } from './mute-stages.ts';

const T = Date.parse('2026-06-01T10:00:00Z'); // a Monday
const config = RoutesFile.parse({
  receivers: [{ name: 'chat', channel: 'record' }],
  route: {
    receiver: 'chat',
    group_by: ['alertname'],
    group_wait: '30s',
    group_interval: '5m',
    repeat_interval: '4h',
    routes: [{ receiver: 'chat', matchers: ['alertname="GpuHot"'], mute_time_intervals: ['always'], active_time_intervals: ['weekends'] }],
  },
  inhibit_rules: [{ source_matchers: ['severity="critical"'], target_matchers: ['severity="warning"'], equal: ['host'] }],
  time_intervals: [
    { name: 'always', time_intervals: [{}] },
    { name: 'weekends', time_intervals: [{ weekdays: ['saturday', 'sunday'] }] },
  ],
});
const route = routesFor(config.route, { alertname: 'GpuHot' })[0]!;

function alert(
  fingerprint: string,
  labels: Record<string, string>,
  status: AlertView['status'] = 'firing',
  severity: AlertView['severity'] = 'warning',
): AlertView {
  return {
    id: fingerprint,
    fingerprint,
    host: labels.host ?? 'h',
    status,
    severity,
    category: 'thermal',
    summary: fingerprint,
    startsAt: new Date(T).toISOString(),
    expected: false,
    evidence: [],
    labels: dict(Object.entries(labels)),
  };
}

describe('the mute stages, each alone and in order', () => {
  const inhibitor = new Inhibitor(config.inhibit_rules);
  const state = emptyNotifierState();
  const source = alert('src', { host: 'gpu-1', severity: 'critical' });
  state.firing.src = source.labels;
  inhibitor.remember(state, 'src', source.labels);
  const target = alert('tgt', { host: 'gpu-1', severity: 'warning', alertname: 'GpuHot' });
  const input = { state, route, alert: target, now: T };
  const compile = (texts: readonly string[]) => texts.flatMap((t) => parseMatchers(t) as Matcher[]);
  state.silences.s1 = { id: 's1', matchers: ['host="gpu-1"'], startsAt: T - 1, endsAt: T + 3_600_000, createdBy: 'bo', comment: 'fan swap' };
  const silences = new SilenceIndex(state.silences, compile);
  const stages = {
    inhibit: inhibitStage(inhibitor),
    active_time: activeTimeStage(config.time_intervals),
    mute_time: muteTimeStage(config.time_intervals),
    silence: silenceStage(() => silences),
  };

  it('each stage holds the alert back for its own reason', () => {
    expect(stages.inhibit.hold(input)).toEqual({ reason: 'inhibited', detail: 'inhibited by an alert src on gpu-1' });
    expect(stages.inhibit.hold({ ...input, alert: alert('other', { host: 'gpu-2', severity: 'warning' }) })).toBeUndefined();
    expect(stages.active_time.hold(input)).toEqual({ reason: 'muted', detail: "outside the route's active time intervals" });
    expect(stages.active_time.hold({ ...input, now: Date.parse('2026-06-06T10:00:00Z') })).toBeUndefined(); // a Saturday
    expect(stages.mute_time.hold(input)).toEqual({ reason: 'muted', detail: 'inside mute time interval always' });
    expect(stages.silence.hold(input)).toEqual({ reason: 'silenced', detail: 'silence s1 by bo: fan swap' });
    expect(stages.silence.hold({ ...input, now: T + 7_200_000 })).toBeUndefined(); // the silence has ended
  });

  it("run in Alertmanager's order, the first that holds is the reason given", () => {
    expect(MUTE_ORDER).toEqual(['inhibit', 'active_time', 'mute_time', 'silence']);
    const ordered = MUTE_ORDER.map((name) => stages[name]);
    expect(held(ordered, input)?.reason).toBe('inhibited');
    expect(held(ordered.slice(1), input)?.detail).toBe("outside the route's active time intervals");
    expect(held(ordered.slice(2), input)?.detail).toBe('inside mute time interval always');
    expect(held(ordered.slice(3), input)?.reason).toBe('silenced');
    expect(held([], input)).toBeUndefined();
  });
});

describe('the group stages: wait, dedup against the notification log, and the log set', () => {
  const group = (): NotifierState['groups'][string] => ({ key: 'g', route, alerts: dict(), told: dict(), nextFlush: T + 30_000, lastSent: 0 });
  const none = () => undefined;

  it('wait: not before group_wait, then group_interval after each flush', () => {
    const state = emptyNotifierState();
    const g = group();
    g.alerts.a = alert('a', { alertname: 'GpuHot' });
    state.groups.g = g;
    expect([due(g, T), due(g, T + 30_000)]).toEqual([false, true]);
    settle(state, g, T + 30_000);
    expect([due(g, T + 30_000 + 299_999), due(g, T + 330_000)]).toEqual([false, true]);
  });

  it('dedup: first, new alerts, changed, resolved, a repeat after repeat_interval, and nothing otherwise', () => {
    const state = emptyNotifierState();
    const g = group();
    state.groups.g = g;
    const flush = (now: number) => {
      const seen = view(g, none);
      const news = dedup(g, seen, now);
      if (news) recordSent(g, news.alerts, now);
      settle(state, g, now);
      return news && [news.reason, news.alerts.map((a) => a.fingerprint).join(',')];
    };
    let t = T + 30_000;
    g.alerts.a = alert('a', { alertname: 'GpuHot' });
    expect(flush(t)).toEqual(['first', 'a']);
    expect(flush((t += 300_000))).toBeUndefined(); // told already
    g.alerts.b = alert('b', { alertname: 'GpuHot' });
    expect(flush((t += 300_000))).toEqual(['new_alerts', 'b']);
    g.alerts.a = alert('a', { alertname: 'GpuHot' }, 'firing', 'critical');
    expect(flush((t += 300_000))).toEqual(['changed', 'a']);
    g.alerts.b = alert('b', { alertname: 'GpuHot' }, 'resolved');
    expect(flush((t += 300_000))).toEqual(['resolved', 'b']);
    expect(Object.keys(g.alerts)).toEqual(['a']); // a resolved alert leaves the group once told
    expect(flush((t += 3_600_000))).toBeUndefined();
    expect(flush((t += 4 * 3_600_000))).toEqual(['repeat', 'a']);
  });

  it('an alert a mute stage holds is not shown and not news, but still counts as firing', () => {
    const g = group();
    g.alerts.a = alert('a', { alertname: 'GpuHot' });
    g.alerts.b = alert('b', { alertname: 'GpuHot' });
    const seen = view(g, (x) => (x.fingerprint === 'b' ? { reason: 'silenced', detail: '' } : undefined));
    expect([seen.shown.map((a) => a.fingerprint), seen.changed.map((a) => a.fingerprint), seen.firing]).toEqual([['a'], ['a'], 2]);
  });
});
