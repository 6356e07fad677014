import { Engine, emptyEngineState, loadRuleSet, syntheticFleet } from '@gpualert/engine';
import { loadXidCatalog } from '@gpualert/rules';
import type { Envelope } from '@gpualert/schema';
import { format, median } from './harness.ts';

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
  console.log(`${'GPU samples judged, one core'.padEnd(58)} ${format(median(rates)).padStart(12)} GPU samples/s  (median of ${rates.length} one-minute rounds; min ${format(Math.min(...rates))}, max ${format(Math.max(...rates))})`);
  console.log(`${'state per GPU (JSON as stored)'.padEnd(58)} ${format(bytes).padStart(12)} bytes  (${alerts} alerts on a healthy fleet)`);
}
