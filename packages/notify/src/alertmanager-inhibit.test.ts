import { newEnvelope, type EnvelopeOf } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { ALERTMANAGER_API_SOURCE } from './alert-labels.ts';
import { emptyNotifierState, NotifierCore } from './notifier-core.ts';
import { RoutesFile } from './route-config.ts';

/**
 * Alertmanager's inhibit/inhibit_test.go (v0.25.0), TestInhibitRuleMatches and
 * TestInhibitRuleMatchers, ported: the same rules, source alerts and target label sets, the same
 * expected answer from (*Inhibitor).Mutes.
 */
const T = Date.parse('2026-06-01T00:00:00Z');

function pushed(fingerprint: string, labels: Record<string, string>): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: fingerprint,
    host: 'h',
    source: ALERTMANAGER_API_SOURCE,
    labels,
    data: {
      fingerprint,
      status: 'firing',
      severity: 'warning',
      category: 'other',
      rule: 'r',
      summary: fingerprint,
      starts_at: new Date(T - 60_000).toISOString(),
      evidence: [],
    },
  });
}

/**
 * Whether the rules mute a target, asked of the one inhibitor both ways: the API's markers
 * (inhibitedBy), and the decision path (the target pushed into its own group and flushed: held
 * back, or told). The two must agree, or the answer is thrown as a disagreement.
 */
function inhibitor(rules: unknown[]) {
  const core = new NotifierCore(
    RoutesFile.parse({ receivers: [{ name: 'r', channel: 'record' }], route: { receiver: 'r', group_by: ['...'], group_wait: '0s' }, inhibit_rules: rules }),
  );
  const state = emptyNotifierState();
  core.ingest(state, pushed('source1', { s1: '1', t1: '2', e: '1' }), T);
  core.ingest(state, pushed('source2', { s2: '1', t2: '1', e: '1' }), T);
  core.flush(state, T);
  // Each target a group_interval later than the last: one that joins a source's group is flushed too.
  let now = T;
  return (target: Record<string, string>) => {
    now += 600_000;
    const fp = `target-${now}`;
    const marked = core.markers(state, fp, target, now).inhibitedBy.length > 0;
    const decided = [...core.ingest(state, pushed(fp, target), now), ...core.flush(state, now)];
    const told = decided.some((d) => 'send' in d && d.send.alerts.some((a) => a.fingerprint === fp));
    const held = decided.some((d) => 'suppressed' in d && d.suppressed.reason === 'inhibited' && d.suppressed.fingerprints.includes(fp));
    const resolved = pushed(fp, target);
    core.ingest(state, { ...resolved, data: { ...resolved.data, status: 'resolved', ends_at: new Date(now).toISOString() } }, now);
    if (marked !== held || held === told)
      throw new Error(
        `${JSON.stringify(target)}: markers say ${marked ? '' : 'not '}inhibited, the decision path ${told ? 'told it' : held ? 'held it' : 'did neither'}`,
      );
    return marked;
  };
}

const TARGETS: readonly Record<string, string>[] = [
  { t1: '1', e: '1' },
  { t2: '1', e: '1' },
  { t1: '1', t3: '1', e: '1' },
  { t1: '1', t2: '1', e: '1' },
  { t1: '0', e: '1' },
  { s1: '1', t1: '1', e: '1' },
  { s2: '1', t2: '1', e: '1' },
  { t1: '1', e: '0' },
];

describe("Alertmanager's inhibit_test.go, through the API's markers and the decision path alike", () => {
  it('TestInhibitRuleMatches: source_match/target_match, a source matching both sides does not inhibit a target matching both', () => {
    const mutes = inhibitor([
      { source_match: { s1: '1' }, target_match: { t1: '1' }, equal: ['e'] },
      { source_match: { s2: '1' }, target_match: { t2: '1' }, equal: ['e'] },
    ]);
    expect(TARGETS.map(mutes)).toEqual([true, true, true, true, false, true, false, false]);
  });

  it('TestInhibitRuleMatchers: source_matchers/target_matchers with != ', () => {
    const mutes = inhibitor([
      { source_matchers: ['s1="1"'], target_matchers: ['t1!="1"'], equal: ['e'] },
      { source_matchers: ['s2="1"'], target_matchers: ['t2="1"'], equal: ['e'] },
    ]);
    expect(TARGETS.map(mutes)).toEqual([false, true, false, true, true, false, true, false]);
  });

  it('an alert never inhibits itself, and a resolved source inhibits nothing', () => {
    const core = new NotifierCore(
      RoutesFile.parse({ receivers: [{ name: 'r' }], route: { receiver: 'r' }, inhibit_rules: [{ source_matchers: ['a="1"'], target_matchers: ['b="1"'] }] }),
    );
    const state = emptyNotifierState();
    core.ingest(state, pushed('both', { a: '1', b: '1' }), T);
    expect(core.markers(state, 'both', { a: '1', b: '1' }, T).inhibitedBy).toEqual([]);
    expect(core.markers(state, 'other', { b: '1' }, T).inhibitedBy).toEqual(['both']);
    const resolved = pushed('both', { a: '1', b: '1' });
    core.ingest(state, { ...resolved, data: { ...resolved.data, status: 'resolved', ends_at: new Date(T).toISOString() } }, T);
    expect(core.markers(state, 'other', { b: '1' }, T).inhibitedBy).toEqual([]);
  });
});
