import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildFleetSnapshot, emptyEngineState, Engine, engineHostKey, loadRuleSet, replay, storeFleetSource, type LatestGpuSample } from '@gpualert/engine';
import { bundledPath, loadXidCatalog } from '@gpualert/rules';
import { FleetSnapshot, parseEnvelope } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const lines = readFileSync(resolve(bundledPath('demo'), 'incident.jsonl'), 'utf8').split('\n');

/** The bundled demo through the engine, as `gpualert up --demo` plays it; and each host's last sample. */
function demo() {
  const state = emptyEngineState();
  replay(new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never)), lines, state);
  const latest = new Map<string, LatestGpuSample>();
  for (const line of lines) {
    const parsed = line.trim() === '' ? undefined : parseEnvelope(line);
    if (parsed?.ok && parsed.value.type === 'gpu.sample') latest.set(parsed.value.host, { at: Date.parse(parsed.value.ts), gpus: parsed.value.data.gpus });
  }
  return { state, latest };
}

describe("the fleet snapshot built from the engine's state", () => {
  it("shows the demo's faulty GPUs in their states, each metric inside or outside its own band, in the contract's shape", () => {
    const { state, latest } = demo();
    const snapshot = buildFleetSnapshot({
      hosts: Object.values(state.hosts),
      latest,
      ruleSet: rules.value,
      now: Date.parse('2026-06-01T03:00:00Z'),
      source: 'engine',
    });
    expect(FleetSnapshot.safeParse(snapshot).success).toBe(true);
    const states = Object.fromEntries(snapshot.hosts.flatMap((h) => h.gpus.filter((g) => g.state !== 'ok').map((g) => [`${h.host}/${g.index}`, g.state])));
    expect(states).toMatchObject({ 'gpu-node-002/3': 'critical', 'gpu-node-001/5': 'warning', 'gpu-node-000/2': 'warning' });
    expect(snapshot.hosts.map((h) => h.host)).toEqual(['gpu-node-000', 'gpu-node-001', 'gpu-node-002']);
    expect(snapshot.hosts.every((h) => h.gpus.length === 8)).toBe(true);

    const hot = snapshot.hosts.find((h) => h.host === 'gpu-node-001')!.gpus[5]!;
    const temp = hot.metrics.temp_c;
    const band = temp.band!;
    // the alert said: 74 °C, 12.6 °C above its own normal of 61.4 °C at this load
    expect(band.mean).toBeCloseTo(61.4, 0);
    expect(band.k).toBe(4);
    expect(band.load).toMatch(/^busy/);
    expect(temp.value!).toBeGreaterThan(band.mean + band.k * band.spread);
    expect(temp.siblings_median!).toBeLessThan(band.mean + band.k * band.spread);
    // a healthy sibling sits inside its own
    const calm = snapshot.hosts.find((h) => h.host === 'gpu-node-001')!.gpus[0]!.metrics.temp_c;
    expect(Math.abs(calm.value! - calm.band!.mean)).toBeLessThanOrEqual(calm.band!.k * calm.band!.spread);
    // no baseline rule for utilisation: no band, never a made-up one
    expect(hot.metrics.util_pct.band).toBeNull();
    expect(hot.alerts.map((a) => a.category).sort()).toEqual(['baseline', 'thermal']);

    const lost = snapshot.hosts.find((h) => h.host === 'gpu-node-002')!;
    expect(lost.gpus[3]!.alerts.some((a) => a.category === 'fallen_off_bus' && a.incident !== null)).toBe(true);
    expect(snapshot.hosts.find((h) => h.host === 'gpu-node-000')!.maintenance.map((m) => m.status)).toEqual(['scheduled']);
    expect(snapshot.events[0]!.at).toBeGreaterThanOrEqual(snapshot.events.at(-1)!.at);
  });

  it('reads the hosts the engine saved in the store, and skips a saved state that does not read', async () => {
    const { state, latest } = demo();
    const store = new MemoryStore();
    for (const [name, host] of Object.entries(state.hosts)) await store.set(engineHostKey(name), JSON.stringify(host));
    await store.set(engineHostKey('gpu-node-999'), '{"version": 99}');
    latest.set('gpu-node-999', latest.get('gpu-node-000')!);
    const snapshot = await storeFleetSource(store, latest, rules.value, 1).snapshot(Date.now());
    expect(snapshot.hosts.map((h) => h.host)).toEqual(['gpu-node-000', 'gpu-node-001', 'gpu-node-002']);
    expect(snapshot.hosts[2]!.gpus[3]!.state).toBe('critical');
  });
});
