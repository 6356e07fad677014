import { emptyEngineState, newHostState } from '@gpualert/engine';
import { TOPICS } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { AbsenceGate, UNHEARD_PARTITION_MS } from './absence-gate.ts';

/** Two hosts scraped every second, one on each of two samples partitions; a gate on a clock the test moves. */
function twoPartitions() {
  const state = emptyEngineState();
  for (const host of ['h0', 'h1']) state.hosts[host] = { ...newHostState(host, {}, 'default'), intervalMs: 1_000 };
  let now = 0;
  const gate = new AbsenceGate(() => now);
  gate.assigned([0, 1].map((partition) => ({ topic: TOPICS.gpuSamples, partition })));
  const samples = (partition: number) => gate.judged(TOPICS.gpuSamples, partition, 0);
  return { state, gate, samples, at: (ms: number) => void (now = ms) };
}

describe('when absence may be judged', () => {
  it('input that stopped and comes back one partition first: absence waits for the other partition too', () => {
    const { state, gate, samples, at } = twoPartitions();
    samples(0);
    samples(1);
    expect(gate.open(state)).toBe(true);
    at(10_000); // nothing for ten seconds: a broker of three killed, producers waiting for new leaders
    expect(gate.open(state)).toBe(false);
    at(11_000);
    samples(0); // its partition's new leader answers first
    expect(gate.open(state)).toBe(false); // h1's samples are still on their way: it is not down
    samples(1);
    expect(gate.open(state)).toBe(true);
  });

  it('a stall no tick saw (the tick itself waiting on Kafka) is still a stall: absence waits for the partition not yet back', () => {
    const { state, gate, samples, at } = twoPartitions();
    samples(0);
    samples(1);
    expect(gate.open(state)).toBe(true);
    at(10_000);
    samples(0); // the first batch in ten seconds, and no tick in between
    expect(gate.open(state)).toBe(false);
    samples(1);
    expect(gate.open(state)).toBe(true);
  });

  it('a partition that stays unheard holds absence back for a minute from the stall, no longer', () => {
    const { state, gate, samples, at } = twoPartitions();
    samples(0);
    samples(1);
    at(5_000);
    expect(gate.open(state)).toBe(false);
    for (let t = 6_000; t < UNHEARD_PARTITION_MS; t += 1_000) {
      at(t);
      samples(0); // partition 0 back and steady, partition 1 silent
      expect(gate.open(state)).toBe(false);
    }
    at(UNHEARD_PARTITION_MS);
    samples(0);
    expect(gate.open(state)).toBe(true); // a host of partition 1 silent a minute is called down
  });
});
