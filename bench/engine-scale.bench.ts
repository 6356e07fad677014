import { Engine, emptyEngineState, loadRuleSet, type EngineState } from '@gpualert/engine';
import { loadXidCatalog } from '@gpualert/rules';
import { syntheticFleet } from '@gpualert/test-support';
import { format, median } from './harness.ts';

const GPUS = 8;
/** Two minutes of scrapes a host (one every 10 s): every GPU has a baseline and siblings. */
const MINUTES = 2;
const T0 = Date.parse('2026-06-01T00:00:00Z');

/**
 * The engine's core as the fleet grows (issue 34 item 5): 1,000, 10,000 and 100,000 GPUs judged in
 * one process, each size from an empty state. Per size: GPU samples judged a second, the heap the
 * fleet's state holds, that state as the service stores it (JSON per host, what Redis keeps under
 * engine:host:*), and the tick — the judging of every host's quiet periods and absences that the
 * service runs every 2 s — with the fleet reporting, and with the whole fleet silent 10 min (every
 * host judged absent at once: the worst tick). Generating the fleet is not timed. `--expose-gc`
 * (NODE_OPTIONS) makes the heap figures exact; without it they include garbage.
 */
export async function benchEngineScale(): Promise<void> {
  console.log(`\n## Rules engine core as the fleet grows: ${GPUS} GPUs a host, ${MINUTES} minutes of scrapes, default rules, one core`);
  const rules = loadRuleSet();
  const catalog = loadXidCatalog();
  if (!rules.ok || !catalog.ok) throw new Error('rules');
  const gc = (globalThis as { gc?: () => void }).gc;
  const sizes = (process.env.GPUALERT_BENCH_SCALE_HOSTS ?? '125,1250,12500').split(',').map(Number);
  const rows: Record<string, number>[] = [];
  // A small fleet first, not measured: the first size would otherwise carry the JIT's warm-up.
  const warm = new Engine(rules.value, catalog.value, false);
  const warmState = emptyEngineState();
  for (const envelope of syntheticFleet({ hosts: 125, gpusPerHost: GPUS, start: T0, minutes: MINUTES, seed: 8 })) warm.advance(warmState, envelope);
  for (const hosts of sizes) {
    gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const engine = new Engine(rules.value, catalog.value, false);
    let state: EngineState | undefined = emptyEngineState();
    let judging = 0;
    let samples = 0;
    let last = T0;
    for (const envelope of syntheticFleet({ hosts, gpusPerHost: GPUS, start: T0, minutes: MINUTES, seed: 9 })) {
      const started = performance.now();
      engine.advance(state, envelope);
      judging += performance.now() - started;
      if (envelope.type === 'gpu.sample') {
        samples += envelope.data.gpus.length;
        last = Math.max(last, Date.parse(envelope.ts));
      }
      // A turn of the loop now and then: the bench's own process stays answerable.
      if (samples % 80_000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    gc?.();
    const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
    let storedBytes = 0;
    for (const host of Object.values(state.hosts)) storedBytes += Buffer.byteLength(JSON.stringify(host));
    const reporting: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const started = performance.now();
      engine.tick(state, last + 1_000);
      reporting.push(performance.now() - started);
    }
    // The silent fleet's tick on a copy each time: the first one judges every host absent, as a real outage's first tick would.
    const silent: number[] = [];
    let silentAlerts = 0;
    for (let i = 0; i < 3; i += 1) {
      const copy = structuredClone(state);
      const started = performance.now();
      silentAlerts = engine.tick(copy, last + 10 * 60_000).length;
      silent.push(performance.now() - started);
    }
    const row = {
      gpus: hosts * GPUS,
      gpu_samples_per_s: Math.round(samples / (judging / 1000)),
      heap_mb: Math.round(heapMb * 10) / 10,
      stored_state_mb: Math.round((storedBytes / 1e6) * 10) / 10,
      tick_ms: Math.round(median(reporting) * 100) / 100,
      silent_tick_ms: Math.round(median(silent) * 10) / 10,
      silent_tick_alerts: silentAlerts,
    };
    rows.push(row);
    console.log(
      `${`${format(row.gpus)} GPUs (${format(hosts)} hosts)`.padEnd(24)} ${format(row.gpu_samples_per_s).padStart(9)} GPU samples/s, heap ${format(row.heap_mb)} MB${gc ? '' : ' (no --expose-gc)'}, stored state ${format(row.stored_state_mb)} MB, tick ${format(row.tick_ms)} ms, tick with the fleet silent ${format(row.silent_tick_ms)} ms (${format(row.silent_tick_alerts)} alerts)`,
    );
    state = undefined;
  }
  console.log(JSON.stringify({ engine_scale: rows }));
}
