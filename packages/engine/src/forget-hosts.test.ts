import { loadXidCatalog } from '@gpualert/rules';
import type { EnvelopeOf } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { emptyEngineState } from './engine-state.ts';
import { DEFAULT_FORGET_AFTER_MS, forgetHost, hostsToForget, parseForgetAfter } from './forget-hosts.ts';
import { loadRuleSet } from './load-rules.ts';
import { syntheticFleet } from '@gpualert/test-support';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const T0 = Date.parse('2026-06-01T00:00:00Z');
const DAY = 86_400_000;
const OLD = '535.104.05';

/** Five hosts of cluster `lab`: gpu-node-000..002 on an old driver (the racks being retired), 003 and 004 on the new one. */
function judged() {
  const engine = new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
  const state = emptyEngineState();
  const alerts: EnvelopeOf<'alert'>[] = [];
  for (const e of syntheticFleet({
    hosts: 5,
    gpusPerHost: 2,
    start: T0,
    minutes: 1,
    seed: 9,
    inventory: (h, inv) => (h < 3 ? { ...inv, driver_version: OLD } : inv),
  })) {
    alerts.push(...engine.advance(state, e));
  }
  return { engine, state, alerts };
}

describe('forgetting a host', () => {
  it("a forgotten host no longer counts in its cluster's majority: drift is judged against the hosts that remain", () => {
    const { engine, state, alerts } = judged();
    const drift = (list: readonly EnvelopeOf<'alert'>[]) =>
      list.filter((a) => a.data.rule === 'version-drift' && a.data.status === 'firing').map((a) => a.host);
    // The old racks are the majority, so the new hosts look drifted: what forgetting must end.
    expect(drift(alerts)).toEqual(['gpu-node-003', 'gpu-node-004']);
    for (const host of ['gpu-node-000', 'gpu-node-001', 'gpu-node-002']) forgetHost(state, host, T0 + 2 * 60_000);
    expect(Object.keys(state.hosts).sort()).toEqual(['gpu-node-003', 'gpu-node-004']);
    expect(Object.keys(state.fleet.clusters.lab ?? {}).sort()).toEqual(['gpu-node-003', 'gpu-node-004']);
    // A fresh inventory of a new host: 2 of 2 on the new driver, no drift; its alert resolves.
    const inventory = [...syntheticFleet({ hosts: 5, gpusPerHost: 2, start: T0 + 3 * 60_000, minutes: 1, seed: 9 })].filter(
      (e) => e.type === 'host.inventory' && e.host === 'gpu-node-003',
    );
    const next = inventory.flatMap((e) => engine.advance(state, e));
    expect(drift(next)).toEqual([]);
    expect(next.filter((a) => a.data.rule === 'version-drift').map((a) => [a.host, a.data.status])).toEqual([['gpu-node-003', 'resolved']]);
  });

  it('resolves what still fires for the host, and says nothing for one it does not hold', () => {
    const { state } = judged();
    const firing = Object.values(state.hosts['gpu-node-003']!.trackers).filter((t) => t.told === 'firing').length;
    expect(firing).toBeGreaterThan(0);
    const resolves = forgetHost(state, 'gpu-node-003', T0 + 2 * 60_000)!;
    expect(resolves.map((a) => [a.host, a.data.rule, a.data.status])).toEqual([['gpu-node-003', 'version-drift', 'resolved']]);
    expect(state.hosts['gpu-node-003']).toBeUndefined();
    expect(forgetHost(state, 'gpu-node-003', T0 + 3 * 60_000)).toBeUndefined();
  });

  it('the hosts to forget are those unheard for longer than the limit, oldest first, at most `limit`', () => {
    const { state } = judged();
    const last = Math.max(...Object.values(state.hosts).map((h) => h.lastSample!));
    expect(hostsToForget(state, last + DAY - 1, DAY)).toEqual([]);
    state.hosts['gpu-node-004']!.lastSample = T0 - 1;
    expect(hostsToForget(state, last + DAY / 2, DAY)).toEqual([]);
    expect(hostsToForget(state, T0 + DAY, DAY)).toEqual(['gpu-node-004']);
    expect(hostsToForget(state, last + 2 * DAY, DAY)).toHaveLength(5);
    expect(hostsToForget(state, last + 2 * DAY, DAY, 2)[0]).toBe('gpu-node-004');
    expect(hostsToForget(state, last + 2 * DAY, DAY, 2)).toHaveLength(2);
  });

  it('GPUALERT_FORGET_AFTER reads a day to a year, with a unit', () => {
    expect(parseForgetAfter(undefined)).toBe(DEFAULT_FORGET_AFTER_MS);
    expect(parseForgetAfter('')).toBe(7 * DAY);
    expect(parseForgetAfter('30d')).toBe(30 * DAY);
    expect(parseForgetAfter('1440m')).toBe(DAY);
    expect(parseForgetAfter('7')).toMatch(/expects a duration like 7d/);
    expect(parseForgetAfter('-7d')).toMatch(/expects a duration like 7d/);
    expect(parseForgetAfter('12h')).toMatch(/between 1d and 366d/);
    expect(parseForgetAfter('400d')).toMatch(/between 1d and 366d/);
  });
});
