import { readFileSync } from 'node:fs';
import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { ENGINE_STATE_VERSION } from './engine-state-schema.ts';
import { emptyEngineState, parseFleetState, parseHostState, type EngineState } from './engine-state.ts';
import { loadRuleSet } from './load-rules.ts';
import { replay } from './replay.ts';
import { StreamClock } from './time-policy.ts';

const rules = loadRuleSet();
if (!rules.ok) throw new Error(rules.errors.map(formatRuleError).join('\n'));
const catalog = loadXidCatalog();
if (!catalog.ok) throw new Error('catalog');
const engine = () => new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
const V0 = JSON.parse(readFileSync(new URL('./fixtures/engine-state-v0.json', import.meta.url), 'utf8')) as Record<string, string>;
const DEMO = readFileSync(new URL('../../../demo/incident.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l !== '');

const xid79 = (host: string, at: number): Envelope =>
  newEnvelope({
    type: 'kernel.event',
    id: `xid79-${host}-${at}`,
    host,
    source: 'test',
    ts: new Date(at).toISOString(),
    data: { kind: 'xid', xid: 79, gpu: 3, message: 'NVRM: Xid (PCI:0000:4b:00): 79, GPU has fallen off the bus.', severity: 'critical' },
  });

describe('persisted engine state', () => {
  it('a state written by gpualert before issue 22 (no version) loads, migrated with a note, and is judged onward', () => {
    const notes: string[] = [];
    const state = emptyEngineState();
    for (const [key, json] of Object.entries(V0)) {
      if (key === 'engine:fleet') state.fleet = parseFleetState(json, (n) => notes.push(n));
      else state.hosts[key.slice('engine:host:'.length)] = parseHostState(json, (n) => notes.push(`${key}: ${n}`))!;
    }
    expect(notes).toEqual(['engine:host:gpu-node-000: migrated from version 0 to 1', 'engine:host:gpu-node-001: migrated from version 0 to 1']);
    const host = state.hosts['gpu-node-000']!;
    const old = JSON.parse(V0['engine:host:gpu-node-000']!) as { trackers: object; gpus: Record<string, { baselines: object }> };
    expect(host.version).toBe(ENGINE_STATE_VERSION);
    expect(Object.keys(host.trackers)).toEqual(Object.keys(old.trackers));
    expect(Object.keys(host.trackers).length).toBeGreaterThan(0);
    expect(host.gpus['0']!.baselines).toEqual(old.gpus['0']!.baselines);
    expect('now' in host || 'lastSeen' in host.gpus['0']!).toBe(false);
    // Judged onward: the open maintenance window and the learned normals are there, and a GPU off the bus pages.
    const at = Date.parse('2026-06-01T00:21:00Z');
    const alerts = engine().advance(state, xid79('gpu-node-000', at));
    expect(alerts.map((a) => [a.data.rule, a.data.status, a.data.severity])).toEqual([['gpu-absent', 'firing', 'critical']]);
  });

  it('a state it cannot use is judged afresh with a note, never a crash; a bad entry costs that entry', () => {
    const notes: string[] = [];
    const good = JSON.parse(V0['engine:host:gpu-node-000']!) as Record<string, unknown>;
    expect(parseHostState('{"version":', (n) => notes.push(n))).toBeUndefined();
    expect(parseHostState('[1,2]', (n) => notes.push(n))).toBeUndefined();
    expect(parseHostState(JSON.stringify({ ...good, version: 99 }), (n) => notes.push(n))).toBeUndefined();
    expect(parseHostState(JSON.stringify({ ...good, intervalMs: 'soon' }), (n) => notes.push(n))).toBeUndefined();
    expect(notes).toEqual([
      'not JSON: the host starts afresh',
      'not an object: the host starts afresh',
      'version 99 is not one this engine reads (1): the host starts afresh',
      'migrated from version 0 to 1',
      'intervalMs: Invalid input: expected number, received string: the host starts afresh',
    ]);
    notes.length = 0;
    const trackers = good.trackers as Record<string, unknown>;
    const [first] = Object.keys(trackers);
    const host = parseHostState(JSON.stringify({ ...good, version: 1, trackers: { ...trackers, [first!]: { rule: 'x' } } }), (n) => notes.push(n))!;
    expect(Object.keys(host.trackers)).toEqual(Object.keys(trackers).filter((k) => k !== first));
    expect(notes).toEqual([`trackers.${JSON.stringify(first)} does not check: dropped`]);
    expect(parseFleetState('{"jobs":{"j":{"h":{"util":"x","at":1}}},"clusters":{}}', (n) => notes.push(n)).jobs).toEqual({});
  });

  it('the demo incident judged with a restart (save, load, a new engine) after every envelope gives the same alerts as without', () => {
    const straight = replay(engine(), DEMO);
    expect(straight.filter((a) => a.data.category === 'xid' || a.data.rule === 'kernel-event').length).toBeGreaterThan(0); // raw kernel lines were judged
    let state: EngineState = emptyEngineState();
    const alerts: EnvelopeOf<'alert'>[] = [];
    let last = -Infinity;
    let clock = new StreamClock(engine());
    for (const line of DEMO) {
      const envelope = JSON.parse(line) as Envelope;
      last = Math.max(last, Date.parse(envelope.ts));
      alerts.push(...clock.judge(state, envelope));
      // The restart: only what the store would hold survives.
      const hosts = Object.fromEntries(Object.entries(state.hosts).map(([name, host]) => [name, JSON.stringify(host)]));
      const fleet = JSON.stringify(state.fleet);
      state = { hosts: emptyEngineState().hosts, fleet: parseFleetState(fleet) };
      for (const [name, json] of Object.entries(hosts)) state.hosts[name] = parseHostState(json)!;
      clock = new StreamClock(engine(), 'event', undefined, clock.now);
    }
    alerts.push(...clock.tick(state, last));
    expect(alerts.map((a) => a.id)).toEqual(straight.map((a) => a.id));
  });
});
