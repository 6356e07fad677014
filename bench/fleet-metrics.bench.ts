import { emptyEngineState, Engine, loadRuleSet, renderFleetMetrics, StreamClock } from '@gpualert/engine';
import { syntheticFleet } from '@gpualert/test-support';
import { EngineMetrics } from '@gpualert/engine-service';
import { loadXidCatalog } from '@gpualert/rules';
import type { GpuSampleData } from '@gpualert/schema';
import { format, median, percentile } from './harness.ts';

const T0 = Date.parse('2026-06-01T00:00:00Z');

/**
 * Issue 15's target: the engine's `/metrics` for 10,000 GPUs (1,250 hosts × 8) renders in under
 * 200 ms. The state is the engine's own after 20 minutes of a synthetic fleet, with one GPU in 50
 * running 15 °C above its normal (so alerts, incidents and their series are there too).
 * GPUALERT_BENCH_METRICS_GPUS changes the fleet's size.
 */
export async function benchFleetMetrics(): Promise<void> {
  const gpus = Number(process.env.GPUALERT_BENCH_METRICS_GPUS ?? 10_000);
  const hosts = Math.ceil(gpus / 8);
  console.log(`\n## Fleet metrics: /metrics of ${format(hosts * 8)} GPUs (${format(hosts)} hosts × 8)`);
  const rules = loadRuleSet();
  const catalog = loadXidCatalog();
  if (!rules.ok || !catalog.ok) throw new Error('bundled rules do not load');
  const engine = new Engine(rules.value, catalog.value);
  const state = emptyEngineState();
  const clock = new StreamClock(engine);
  const samples = new Map<string, GpuSampleData>();
  const built = performance.now();
  const fleet = syntheticFleet({
    hosts,
    gpusPerHost: 8,
    start: T0,
    minutes: 20,
    seed: 5,
    fault: (h, gpu, at) => (h % 6 === 0 && gpu.index === 3 && at > T0 + 10 * 60_000 ? { ...gpu, temp_c: (gpu.temp_c ?? 60) + 15 } : gpu),
  });
  for (const envelope of fleet) {
    clock.judge(state, envelope);
    if (envelope.type === 'gpu.sample') samples.set(envelope.host, envelope.data);
  }
  console.log(`${'state built (engine judging 20 minutes of samples)'.padEnd(58)} ${format((performance.now() - built) / 1000).padStart(12)} s`);

  const input = { state, ruleSet: rules.value, samples };
  const text = renderFleetMetrics(input);
  const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
  const alerts = text.split('\n').filter((l) => l.startsWith('gpualert_alert_started_timestamp_seconds{')).length;
  console.log(`${'exposition'.padEnd(58)} ${format(series).padStart(12)} series, ${format(text.length / 1024 / 1024)} MiB, ${alerts} firing alerts`);
  const times: number[] = [];
  for (let i = 0; i < 30; i += 1) {
    const started = performance.now();
    renderFleetMetrics(input);
    times.push(performance.now() - started);
  }
  console.log(
    `${'renderFleetMetrics (the fleet part)'.padEnd(58)} ${format(median(times)).padStart(12)} ms median of 30 (p95 ${format(percentile(times, 95))} ms; target < 200 ms)`,
  );

  // What a scrape costs: the fleet and the pipeline's own registries, as /metrics serves them.
  // Each scrape renders afresh (reuseMs 0): the bench times a render, not the 1 s reuse of one.
  const metrics = new EngineMetrics(rules.value, undefined, { reuseMs: 0 });
  metrics.attach(state);
  for (const [host, data] of samples) metrics.noteSample(host, data);
  const scrapes: number[] = [];
  // The render runs in slices (METRICS_RENDER_SLICE_MS): the longest wait it gives other work is
  // the longest gap between two turns of the event loop while it runs.
  const gaps: number[] = [];
  for (let i = 0; i < 30; i += 1) {
    const started = performance.now();
    let last = started;
    let rendering = true;
    const turn = () => {
      const now = performance.now();
      gaps.push(now - last);
      last = now;
      if (rendering) setImmediate(turn);
    };
    setImmediate(turn);
    await metrics.render();
    rendering = false;
    scrapes.push(performance.now() - started);
  }
  console.log(
    `${'EngineMetrics.render (all of GET /metrics)'.padEnd(58)} ${format(median(scrapes)).padStart(12)} ms median of 30 (p95 ${format(percentile(scrapes, 95))} ms)`,
  );
  console.log(
    `${'  the event loop meanwhile: longest wait between turns'.padEnd(58)} ${format(Math.max(...gaps)).padStart(12)} ms (p99 ${format(percentile(gaps, 99))} ms, ${format(gaps.length)} turns)`,
  );
}
