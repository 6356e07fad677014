import { Engine, emptyEngineState, loadRuleSet } from '@gpualert/engine';
import { loadXidCatalog } from '@gpualert/rules';
import { parseEnvelope, type Envelope } from '@gpualert/schema';
import fc from 'fast-check';
import { hostileEnvelope, syntheticFleet } from '@gpualert/test-support';
import { format, measure, median, percentile } from './harness.ts';

/** The judging core over a synthetic 10,000-GPU fleet with the default rules, on one core. */
export async function benchEngine(): Promise<void> {
  console.log('\n## Rules engine core: 1,250 hosts × 8 GPUs, default rules and templates');
  const rules = loadRuleSet();
  const catalog = loadXidCatalog();
  if (!rules.ok || !catalog.ok) throw new Error('rules');
  const hosts = 1_250;
  const gpus = 8;
  const rounds: Envelope[][] = [];
  const all = [...syntheticFleet({ hosts, gpusPerHost: gpus, start: Date.parse('2026-06-01T00:00:00Z'), minutes: 8, seed: 5 })];
  for (let i = 0; i < all.length; i += hosts * 6) rounds.push(all.slice(i, i + hosts * 6)); // a minute of scrapes each
  const engine = new Engine(rules.value, catalog.value, false);
  const state = emptyEngineState();
  const rates: number[] = [];
  let alerts = 0;
  for (const [i, round] of rounds.entries()) {
    const started = performance.now();
    let samples = 0;
    for (const envelope of round) {
      alerts += engine.advance(state, envelope).length;
      if (envelope.type === 'gpu.sample') samples += envelope.data.gpus.length;
    }
    const rate = samples / ((performance.now() - started) / 1000);
    if (i > 0) rates.push(rate); // the first minute warms the JIT and the baselines
  }
  const bytes = Buffer.byteLength(JSON.stringify(state.hosts)) / (hosts * gpus);
  console.log(
    `${'GPU samples judged, one core'.padEnd(58)} ${format(median(rates)).padStart(12)} GPU samples/s  (median of ${rates.length} one-minute rounds; min ${format(Math.min(...rates))}, max ${format(Math.max(...rates))})`,
  );
  console.log(`${'state per GPU (JSON as stored)'.padEnd(58)} ${format(bytes).padStart(12)} bytes  (${alerts} alerts on a healthy fleet)`);

  // The bounds at the door run in parseEnvelope, ahead of the core: their cost on the samples' hot path.
  const lines = all
    .filter((e) => e.type === 'gpu.sample')
    .slice(0, 20_000)
    .map((e) => JSON.stringify(e));
  await measure('gpu.sample envelopes parsed, bounds checked, one core', 'messages/s', 5, () => {
    for (const line of lines) if (!parseEnvelope(line).ok) throw new Error('a synthetic sample refused');
    return lines.length;
  });

  // The worst one message can cost: hostile envelopes (prototype-key hosts and labels, unicode,
  // huge strings, extreme numbers, 1970 to 9999, samples at and past the GPU bound), parsed and judged.
  const corpus = fc.sample(hostileEnvelope, { numRuns: 2_000, seed: 12 });
  const fuzzEngine = new Engine(rules.value, catalog.value, true);
  const fuzzState = emptyEngineState();
  const parsing: number[] = [];
  const judging: number[] = [];
  for (const line of corpus) {
    const started = performance.now();
    const parsed = parseEnvelope(line);
    const read = performance.now();
    parsing.push(read - started);
    if (!parsed.ok) continue;
    fuzzEngine.advance(fuzzState, parsed.value);
    judging.push(performance.now() - read);
  }
  const spread = (times: number[]) =>
    `max ${Math.max(...times).toFixed(2)} ms, p99 ${percentile(times, 99).toFixed(2)} ms, median ${percentile(times, 50).toFixed(3)} ms`;
  console.log(
    `${'hostile envelopes parsed (bounds checked): per message'.padEnd(58)} ${spread(parsing)}  (${corpus.length} generated, up to ${format(Math.max(...corpus.map((l) => l.length)))} bytes)`,
  );
  console.log(`${'hostile envelopes judged: per valid message'.padEnd(58)} ${spread(judging)}  (${judging.length} valid)`);
}
