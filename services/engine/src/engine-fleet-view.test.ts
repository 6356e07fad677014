import { readFileSync } from 'node:fs';
import { emptyEngineState, Engine, loadRuleSet, replay } from '@gpualert/engine';
import { bundledPath, loadXidCatalog } from '@gpualert/rules';
import { HISTORY_STEP_MS, MAX_HISTORY_POINTS, newEnvelope, parseEnvelope, type Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { EngineFleetView } from './engine-fleet-view.ts';
import { fleetViewAnswer } from './fleet-view-http.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('bundled rules');

/** The demo's GPU samples (a recording: 30 minutes of three hosts), and the Xid 79 the intake makes of its kernel line for gpu-node-002 GPU 3. */
function demo(): Envelope[] {
  const envelopes: Envelope[] = [];
  for (const line of readFileSync(bundledPath('demo/incident.jsonl'), 'utf8').split('\n')) {
    const parsed = line.trim() === '' ? undefined : parseEnvelope(line);
    if (parsed?.ok && parsed.value.type !== 'kernel.line') envelopes.push(parsed.value);
  }
  const lost = newEnvelope({
    type: 'kernel.event',
    host: 'gpu-node-002',
    source: 'collector-kernel/demo',
    ts: '2026-06-01T02:17:59.800Z',
    labels: { cluster: 'demo' },
    data: {
      kind: 'xid',
      xid: 79,
      gpu: 3,
      severity: 'critical',
      message: 'NVRM: Xid (PCI:0000:4b:00): 79, GPU has fallen off the bus.',
      meaning: 'GPU has fallen off the bus',
    },
  });
  envelopes.splice(
    envelopes.findIndex((e) => e.ts > lost.ts),
    0,
    lost,
  );
  return envelopes;
}

/** The demo judged (as the service judges it, on the event clock) and noted by the view as the service notes each envelope. */
function judged(): EngineFleetView {
  const view = new EngineFleetView(rules.ok ? rules.value : (undefined as never), 'event', () => Date.parse('2030-01-01T00:00:00Z'));
  const state = emptyEngineState();
  view.attach(state);
  const envelopes = demo();
  replay(
    new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never)),
    envelopes.map((e) => JSON.stringify(e)),
    state,
  );
  for (const envelope of envelopes) view.note(envelope);
  return view;
}

describe("the engine's view of its fleet for the console", () => {
  it('names a kernel event by what it is, keeps the lost GPU with its band and when it was last seen, and dates the recording by its own clock', async () => {
    const snapshot = await judged().snapshot();
    expect(snapshot.hosts.map((h) => h.host)).toEqual(['gpu-node-000', 'gpu-node-001', 'gpu-node-002']);
    // The recording's own now (its last sample), not the wall clock's 2030.
    expect(new Date(snapshot.data_at ?? 0).toISOString()).toBe('2026-06-01T02:29:50.000Z');
    const lost = snapshot.hosts[2]!.gpus.find((g) => g.index === 3)!;
    expect(lost.events.find((e) => e.kind === 'kernel')?.summary).toBe('Xid 79: GPU has fallen off the bus');
    // Missing from its host's samples since it fell: no value now, the band of its last load, and when it was last in a sample.
    expect(lost.metrics.temp_c.value).toBeNull();
    expect(lost.metrics.temp_c.band).not.toBeNull();
    expect(lost.seen).toBeLessThan(Date.parse('2026-06-01T02:18:10Z'));
    expect(snapshot.hosts[2]!.last_seen).toBe(Date.parse('2026-06-01T02:29:50Z'));
  });

  it('keeps a bounded history per GPU, one point per step, each with its band, served as GpuHistory', async () => {
    const view = judged();
    const answer = await fleetViewAnswer(view, '/v1/fleet/gpu-node-001/5/history');
    expect(answer.status).toBe(200);
    const history = JSON.parse(answer.body) as {
      step_ms: number;
      at: number[];
      metrics: Record<string, { values: (number | null)[]; low: (number | null)[]; high: (number | null)[] }>;
    };
    // 30 minutes of samples every 10 s: one point per 15 s step, never more than the ring holds.
    expect(history.step_ms).toBe(HISTORY_STEP_MS);
    expect(history.at.length).toBe(MAX_HISTORY_POINTS);
    expect(history.at.every((t, i) => i === 0 || t - history.at[i - 1]! >= 5_000)).toBe(true);
    const temp = history.metrics.temp_c!;
    // GPU 5 runs hot: its last points stand above their band.
    expect(temp.values.at(-1)).toBeGreaterThan(temp.high.at(-1)!);
    expect(temp.values[0]).toBeLessThanOrEqual(temp.high[0]!);
    expect((await fleetViewAnswer(view, '/v1/fleet/gpu-node-001/9/history')).status).toBe(404);
    expect((await fleetViewAnswer(view, '/v1/fleet/%ZZ/1/history')).status).toBe(400);
  });

  it('forgets the hosts of a moved assignment: another engine serves them now', async () => {
    const view = judged();
    const state = emptyEngineState();
    view.attach(state);
    view.forget();
    expect((await view.snapshot(Date.parse('2031-01-01T00:00:00Z'))).hosts).toEqual([]);
    expect(await view.history('gpu-node-001', 5)).toBeNull();
  });
  it('answers /v1/fleet as one JSON document, or host by host as NDJSON when asked: the same snapshot either way', async () => {
    const view = judged();
    const snapshot = await view.snapshot();
    expect(snapshot.hosts.length).toBe(3);
    const whole = await fleetViewAnswer(view, '/v1/fleet', 'application/json');
    expect(whole.type).toBe('application/json');
    expect(JSON.parse(whole.body)).toEqual(JSON.parse(JSON.stringify(snapshot)));
    const lines = await fleetViewAnswer(view, '/v1/fleet', 'application/x-ndjson, application/json;q=0.5');
    expect(lines.type).toBe('application/x-ndjson');
    const [shell, ...hosts] = lines.body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(shell).toEqual({ ...JSON.parse(JSON.stringify(snapshot)), hosts: [] });
    expect(hosts).toEqual(JSON.parse(JSON.stringify(snapshot.hosts)));
  });
});
