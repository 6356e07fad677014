import { newEnvelope, type TelemetrySource } from '@gpualert/schema';
import { shippedCatalog } from '@gpualert/test-support';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { emptyEngineState } from './engine-state.ts';
import { loadRuleSet } from './load-rules.ts';

const rules = loadRuleSet();
if (!rules.ok) throw new Error('the bundled rules load');
const T0 = Date.UTC(2026, 2, 1, 10);

function beat(at: number, sources: TelemetrySource[]) {
  return newEnvelope({
    type: 'telemetry.health',
    host: 'gpu-node-7',
    source: 'agent-telemetry/0.1.0',
    ts: new Date(at).toISOString(),
    labels: { cluster: 'a' },
    data: { interval_s: 30, sources },
  });
}

describe('telemetry-stalled: a host agent source gone quiet', () => {
  it('pages once per source, naming it, holds while it stays quiet, and resolves when it is back or no longer listed', () => {
    const engine = new Engine(rules.value, shippedCatalog());
    const state = emptyEngineState();
    const ok: TelemetrySource[] = [
      { source: 'dcgm', state: 'ok', quiet_s: 0 },
      { source: 'kernel-log', state: 'ok' },
    ];
    expect(engine.step(state, beat(T0, ok))).toEqual([]);
    const stale: TelemetrySource = {
      source: 'dcgm',
      state: 'stale',
      quiet_s: 130,
      message: 'every value unchanged for 130 s: the exporter serves old readings',
    };
    const stopped: TelemetrySource = { source: 'kernel-log', state: 'stopped', message: 'journalctl exited (code 1): nothing more will be read' };
    const fired = engine.step(state, beat(T0 + 30_000, [stale, stopped]));
    expect(fired.map((a) => [a.labels.telemetry_source, a.data.status, a.data.severity, a.data.rule])).toEqual([
      ['dcgm', 'firing', 'critical', 'telemetry-stalled'],
      ['kernel-log', 'firing', 'critical', 'telemetry-stalled'],
    ]);
    expect(fired[0]!.data.summary).toBe(
      'dcgm on gpu-node-7 went quiet (stale, no fresh data for 130 s: every value unchanged for 130 s: the exporter serves old readings)',
    );
    // Still quiet: nothing new is told.
    expect(engine.step(state, beat(T0 + 60_000, [stale, stopped]))).toEqual([]);
    // DCGM back; the kernel log no longer watched (the agent restarted without it): both end.
    const back = engine.step(state, beat(T0 + 90_000, [{ source: 'dcgm', state: 'ok', quiet_s: 0 }]));
    expect(back.map((a) => [a.labels.telemetry_source, a.data.status]).sort()).toEqual([
      ['dcgm', 'resolved'],
      ['kernel-log', 'resolved'],
    ]);
  });

  it('a heartbeat naming sources no agent watches (a bug, a lying host) raises nothing for them', () => {
    const engine = new Engine(rules.value, shippedCatalog());
    const state = emptyEngineState();
    const made = Array.from({ length: 32 }, (_, i): TelemetrySource => ({ source: `made-up-${i}`, state: 'down' }));
    expect(engine.step(state, beat(T0, made))).toEqual([]);
    // a known source in the same beat still pages
    const fired = engine.step(state, beat(T0 + 30_000, [...made.slice(0, 31), { source: 'nvidia-smi', state: 'stalled' }]));
    expect(fired.map((a) => a.labels.telemetry_source)).toEqual(['nvidia-smi']);
  });
});
