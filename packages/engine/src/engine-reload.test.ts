import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadXidCatalog } from '@gpualert/rules';
import type { Envelope, EnvelopeOf, GpuMetrics } from '@gpualert/schema';
import { hostName, syntheticFleet } from '@gpualert/test-support';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { emptyEngineState } from './engine-state.ts';
import { DEFAULT_RULES_DIR, loadRuleSet } from './load-rules.ts';
import { StreamClock } from './time-policy.ts';

const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;
const catalog = loadXidCatalog();

/** The bundled rules with the H100's fixed temperature limit lowered from 87 °C to 70 °C. */
function lowerLimit(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-rules-'));
  cpSync(DEFAULT_RULES_DIR, dir, { recursive: true });
  const file = join(dir, 'templates/h100.yaml');
  const text = readFileSync(file, 'utf8');
  const changed = text.replace('gpu-temp-high: { above: 87, recover_below: 82 }', 'gpu-temp-high: { above: 70, recover_below: 65 }');
  expect(changed).not.toBe(text);
  writeFileSync(file, changed);
  return dir;
}

describe('the engine reloads its rules (SIGHUP)', () => {
  it('judges by the new rules from the next envelope on, with every GPU keeping the normal it learned', () => {
    const before = loadRuleSet();
    const after = loadRuleSet(lowerLimit());
    if (!before.ok || !after.ok || !catalog.ok) throw new Error('the rules do not load');
    // Every GPU of the fleet busy at 75 °C: under the H100's 87 °C limit, over 70.
    const warm = (gpu: GpuMetrics): GpuMetrics => ({ ...gpu, util_pct: 97, processes: 1, temp_c: 75 });
    const envelopes: Envelope[] = [...syntheticFleet({ hosts: 2, gpusPerHost: 8, start: T0, minutes: 60, seed: 7, fault: (_h, gpu) => warm(gpu) })];
    const engine = new Engine(before.value, catalog.value);
    const state = emptyEngineState();
    const clock = new StreamClock(engine);
    const judge = (list: Envelope[]) => list.flatMap((e) => clock.judge(state, e));
    const half = envelopes.filter((e) => Date.parse(e.ts) < T0 + 30 * MIN);
    const rest = envelopes.filter((e) => Date.parse(e.ts) >= T0 + 30 * MIN);
    const high = (alerts: EnvelopeOf<'alert'>[]) => alerts.filter((a) => a.data.rule === 'gpu-temp-high' && a.data.status === 'firing');

    expect(high(judge(half))).toEqual([]);
    const gpu = state.hosts[hostName(0)]?.gpus[0];
    const learned = gpu?.baselines;
    expect(Object.keys(learned ?? {}).length).toBeGreaterThan(0);
    expect(engine.reload(state, after.value, catalog.value)).toBe(0); // the same templates bind the same hosts
    const hot = high(judge(rest));
    expect(new Set(hot.map((a) => a.host))).toEqual(new Set([hostName(0), hostName(1)]));
    expect(state.hosts[hostName(0)]?.gpus[0]?.baselines).toBe(learned);
  });

  it('binds each host again by its fingerprint: a template that no longer claims a model lets its hosts go to the default', () => {
    const before = loadRuleSet();
    const dir = lowerLimit();
    const file = join(dir, 'templates/h100.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(`match: { gpu_model: "H100" }`, `match: { gpu_model: "B200" }`));
    const after = loadRuleSet(dir);
    if (!before.ok || !after.ok || !catalog.ok) throw new Error(`the rules do not load: ${JSON.stringify(after.ok ? '' : after.errors)}`);
    const engine = new Engine(before.value, catalog.value);
    const state = emptyEngineState();
    const clock = new StreamClock(engine);
    for (const e of syntheticFleet({ hosts: 3, gpusPerHost: 2, start: T0, minutes: 5, seed: 1 })) clock.judge(state, e);
    expect(Object.values(state.hosts).map((h) => h.template)).toEqual(['h100', 'h100', 'h100']);
    expect(engine.reload(state, after.value, catalog.value)).toBe(3);
    expect(Object.values(state.hosts).map((h) => h.template)).toEqual(['default', 'default', 'default']);
  });

  it('a host whose saved template the rules no longer have (saved before a reload, or by an engine that had not reloaded) is bound again when judged', () => {
    const rules = loadRuleSet();
    if (!rules.ok || !catalog.ok) throw new Error('the rules do not load');
    const engine = new Engine(rules.value, catalog.value);
    const state = emptyEngineState();
    const clock = new StreamClock(engine);
    const fleet = [...syntheticFleet({ hosts: 1, gpusPerHost: 2, start: T0, minutes: 2, seed: 1 })];
    for (const e of fleet.slice(0, fleet.length / 2)) clock.judge(state, e);
    const host = state.hosts[hostName(0)];
    if (!host) throw new Error('no host');
    host.template = 'h100-renamed-since';
    for (const e of fleet.slice(fleet.length / 2)) clock.judge(state, e);
    expect(host.template).toBe('h100');
  });
});
