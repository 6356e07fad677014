import { readFileSync } from 'node:fs';
import { newEnvelope, type EnvelopeOf } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { loadRoutes } from './load-routes.ts';
import { emptyNotifierState, loadNotifierState, NotifierCore, saveNotifierState, type Decision } from './notifier-core.ts';
import { MAX_SAVED_GROUPS } from './saved-notifier-state.ts';

const V0 = readFileSync(new URL('./fixtures/state-v0/notifier-state.json', import.meta.url), 'utf8');
const routes = loadRoutes();
if (!routes.ok) throw new Error(JSON.stringify(routes.errors));
const core = () => new NotifierCore(routes.ok ? routes.value : (undefined as never));
const T = Date.parse('2026-11-30T10:00:00Z');

function resolved(fingerprint: string, host: string, category: string): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    host,
    source: 'engine/0.1.0',
    ts: new Date(T + 600_000).toISOString(),
    labels: { cluster: 'lab', rack: 'r12' },
    data: {
      fingerprint,
      status: 'resolved',
      severity: 'critical',
      category: category as never,
      rule: 'gpu-temp',
      summary: 'back',
      starts_at: new Date(T).toISOString(),
      evidence: [],
    },
  });
}
const sent = (decisions: Decision[]) =>
  decisions.flatMap((d) => ('send' in d ? [`${d.send.receiver}:${d.send.reason}:${d.send.alerts.map((a) => a.fingerprint).join(',')}`] : []));

describe('the notifier state as gpualert saved it before versions (version 0)', () => {
  it('loads, migrated, with every group, page, silence and the notification log, and the core carries on from it', () => {
    const loaded = loadNotifierState(V0);
    expect(loaded.rebuilt).toBeUndefined();
    expect(loaded).toMatchObject({ migratedFrom: 0 });
    // Nothing lost: the loaded state is the saved one, field for field.
    expect(JSON.parse(JSON.stringify(loaded.state))).toEqual(JSON.parse(V0));
    const state = loaded.state;
    // The page is remembered: its resolve pages the resolve, and the chat group tells it after its wait.
    expect(sent(core().ingest(state, resolved('fp-xid-79', 'gpu-node-07', 'fallen_off_bus'), T + 600_000))).toEqual(['pager:page_resolve:fp-xid-79']);
    // A group that waited (second host's thermal warning) sends its first message; a told one does not repeat the firing alert.
    const flushed = sent(core().flush(state, T + 3_600_000));
    expect(flushed).toContain('chat:first:fp-thermal-b');
    expect(flushed).toContain('chat:resolved:fp-xid-79');
    expect(flushed.filter((s) => s.includes('fp-xid-79'))).toEqual(['chat:resolved:fp-xid-79']);
  });

  it('saves with version 1 and reads its own save back unchanged, every map inert', () => {
    const state = loadNotifierState(V0).state;
    const text = saveNotifierState(state);
    expect(JSON.parse(text).version).toBe(1);
    const again = loadNotifierState(text);
    expect(again).not.toHaveProperty('migratedFrom');
    expect(again.rebuilt).toBeUndefined();
    expect(saveNotifierState(again.state)).toBe(text);
    for (const map of [again.state.groups, again.state.pages, again.state.firing, Object.values(again.state.groups)[0]!.alerts]) {
      expect(Object.getPrototypeOf(map)).toBeNull();
    }
  });
});

describe('a damaged or hostile saved state is rebuilt empty with the reason, never a crash', () => {
  const v0 = () => JSON.parse(V0) as Record<string, any>;
  const cases: [string, string, RegExp][] = [
    ['not JSON', '{"groups": {', /^not JSON: /],
    ['an array', '[1,2,3]', /cannot be migrated/],
    ['wrong types', JSON.stringify({ ...v0(), pages: { 'pager|x': { status: 'firing', severity: 'loud', at: 'yesterday' } } }), /pages\.pager\|x\.severity/],
    ['groups as a string', JSON.stringify({ ...v0(), groups: 'all of them' }), /groups: expected an object/],
    [
      'a huge evidence list',
      JSON.stringify({ ...v0(), about: { fp: { startsAt: 'x', updatedAt: 1, summary: 's', evidence: new Array(20_000).fill('e') } } }),
      /about\.fp\.evidence/,
    ],
    [
      'too many groups',
      JSON.stringify({ version: 1, ...emptyNotifierState(), groups: Object.fromEntries(Array.from({ length: MAX_SAVED_GROUPS + 1 }, (_, i) => [`g${i}`, 0])) }),
      /over the bound of 100000/,
    ],
    ['a newer version', JSON.stringify({ ...v0(), version: 7 }), /version 7 was written by a newer gpualert/],
    ['a version that is no version', JSON.stringify({ ...v0(), version: '1' }), /is not a version/],
    ['__proto__ as a group holding junk', V0.replace('{"groups":{', '{"groups":{"__proto__":{"polluted":true},'), /groups\.__proto__/],
  ];
  for (const [what, text, reason] of cases) {
    it(what, () => {
      const loaded = loadNotifierState(text);
      expect(loaded.rebuilt).toMatch(reason);
      expect(loaded.rebuilt!.length).toBeLessThanOrEqual(300);
      expect(Object.keys(loaded.state.groups)).toEqual([]);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  }

  it('keeps __proto__ and constructor as plain keys when what they hold is valid, and pollutes nothing', () => {
    const state = JSON.parse(V0) as Record<string, any>;
    const group = Object.values(state.groups)[0];
    const text = JSON.stringify(state).replace('{"groups":{', `{"groups":{"__proto__":${JSON.stringify(group)},"constructor":${JSON.stringify(group)},`);
    const loaded = loadNotifierState(text);
    expect(loaded.rebuilt).toBeUndefined();
    expect(Object.hasOwn(loaded.state.groups, '__proto__')).toBe(true);
    expect(Object.keys(loaded.state.groups)).toHaveLength(7);
    expect((loaded.state.groups as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("a page's resolve, saved", () => {
  it('keeps where it was read (partition and offset) across a save and a load', () => {
    const state = emptyNotifierState();
    state.pages['pager|fp'] = { status: 'resolved', severity: 'critical', at: 1_800_000_000_000, partition: 5, offset: 1234 };
    const loaded = loadNotifierState(saveNotifierState(state));
    expect(loaded.rebuilt).toBeUndefined();
    expect(loaded.state.pages['pager|fp']).toEqual({ status: 'resolved', severity: 'critical', at: 1_800_000_000_000, partition: 5, offset: 1234 });
  });
});
