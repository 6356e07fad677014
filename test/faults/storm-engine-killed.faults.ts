import { hostName } from '@gpualert/test-support';
import { ENGINE_INPUT_TOPICS } from '@gpualert/engine-service';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline, type Service } from './fault-pipeline.ts';
import { pause } from './fault-pages.ts';
import { waitFor } from '../infra/wait-for.ts';

/** The storm: warnings on hosts of their own (not the fleet's), one chat group per host, none paged. */
const STORM = 20_000;
const STORM_HOSTS = 2_000;
const SHARDS = 10;
const BATCH = 1_000;
const TOKEN = 'storm-faults-token-0123456789';

function stormAlert(i: number, status: 'firing' | 'resolved'): EnvelopeOf<'alert'> {
  const host = hostName(1_000 + (i % STORM_HOSTS));
  return newEnvelope({
    type: 'alert',
    host,
    source: 'faults/storm',
    labels: { cluster: 'lab', storm: 'yes', shard: String(i % SHARDS) },
    data: {
      fingerprint: `storm-${String(i).padStart(6, '0')}`,
      status,
      severity: 'warning',
      category: 'thermal',
      rule: 'gpu-temp-high',
      summary: `GPU ${i % 8} of ${host} hot (storm alert ${i})`,
      starts_at: new Date().toISOString(),
      evidence: [],
    },
  });
}

/** A service's port, from its start line (`"port":N` in the line `msg`). */
function portOf(service: Service, msg: string, field: string): number {
  const line = service
    .output()
    .split('\n')
    .find((l) => l.includes(`"${msg}"`));
  return Number(new RegExp(`"${field}":(\\d+)`).exec(line ?? '')?.[1]);
}

/** Probes `url` every 100 ms until stopped: each answer's time, and the answers that were not 200. */
function probe(url: string): { stop: () => Promise<{ ms: number[]; failed: number }> } {
  const ms: number[] = [];
  let failed = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const start = performance.now();
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
        await response.arrayBuffer();
        if (response.status !== 200) failed += 1;
      } catch {
        failed += 1;
      }
      ms.push(performance.now() - start);
      await pause(100);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { ms, failed };
    },
  };
}

const quantile = (values: readonly number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0;

describe('an alert storm while an engine is killed', () => {
  let pipeline: FaultPipeline;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start();
  });
  afterAll(async () => pipeline?.close());

  it('20,000 alerts fire and resolve while one of two engines is SIGKILLed: every fault paged once, every storm alert resolved, the probes answered', async () => {
    const ALL_PARTITIONS = 6 * ENGINE_INPUT_TOPICS.length;
    const notifier = await pipeline.startService('notifier', ['notifier'], 'group_joined', { GPUALERT_NOTIFIER_TOKEN: TOKEN });
    const a = await pipeline.startService('engine-a', ['engine']);
    const b = await pipeline.startService('engine-b', ['engine']);
    const partitionsOf = FaultPipeline.partitionsHeld;
    await waitFor(() => partitionsOf(a) + partitionsOf(b) === ALL_PARTITIONS && partitionsOf(a) > 0, 'the two engines to share the partitions', 60_000);
    pipeline.startLoad();
    await pause(3_000);
    await pipeline.injectXid(1, 2);
    await pipeline.waitForPages();

    const api = `http://127.0.0.1:${portOf(notifier, 'notifier_listening', 'port')}`;
    const probes = [probe(`${api}/-/healthy`), probe(`http://127.0.0.1:${portOf(b, 'engine_started', 'metrics_port')}/healthz`)];
    const firingOf = async (shard: number) => {
      const url = `${api}/api/v2/alerts?active=true&filter=${encodeURIComponent(`shard="${shard}"`)}&filter=${encodeURIComponent('storm="yes"')}`;
      const response = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
      return ((await response.json()) as unknown[]).length;
    };
    const stormFiring = async () => {
      let n = 0;
      for (let shard = 0; shard < SHARDS; shard += 1) n += await firingOf(shard);
      return n;
    };

    const started = Date.now();
    let killedAt = 0;
    for (let from = 0; from < STORM; from += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, STORM - from) }, (_, k) => stormAlert(from + k, 'firing'));
      await pipeline.publishDurably(TOPICS.alerts, batch);
      if (from === STORM / 2) {
        await pipeline.kill('engine-a');
        killedAt = Date.now();
        // Faults on hosts spread over every partition, while engine-a is dead and the storm runs.
        for (const host of [2, 3, 4, 6, 7, 8, 10, 11]) await pipeline.injectXid(host, 1);
      }
    }
    const stormOut = Date.now() - started;
    await waitFor(() => partitionsOf(b) === ALL_PARTITIONS, 'the survivor to hold every partition', 60_000);
    const takeover = Date.now() - killedAt;
    await pipeline.waitForPages(120_000);
    const pagedBy = Date.now() - killedAt;
    await waitFor(async () => (await stormFiring()) === STORM, `the notifier to hold all ${STORM} storm alerts`, 120_000);
    const heldBy = Date.now() - started;

    const resolving = Date.now();
    for (let from = 0; from < STORM; from += BATCH) {
      await pipeline.publishDurably(
        TOPICS.alerts,
        Array.from({ length: Math.min(BATCH, STORM - from) }, (_, k) => stormAlert(from + k, 'resolved')),
      );
    }
    await waitFor(async () => (await stormFiring()) === 0, 'every storm alert resolved at the notifier', 120_000);
    const resolvedIn = Date.now() - resolving;
    const [notifierProbe, engineProbe] = await Promise.all(probes.map((p) => p.stop()));
    await pipeline.stopLoad();
    await pipeline.waitCaughtUp(120_000);

    // Each fault paged once, none lost; nothing dead-lettered.
    expect(pipeline.pagedFaults()).toEqual(pipeline.expectedFaults());
    expect([...pipeline.pages().values()].filter((p) => p.triggers !== 1)).toEqual([]);
    expect(await pipeline.deadletters()).toBe(0);
    // The probes answered through the storm: liveness is the event loop, and it was never held.
    expect(notifierProbe?.failed).toBe(0);
    expect(engineProbe?.failed).toBe(0);
    const figures = (p: { ms: number[] } | undefined) =>
      `p50 ${quantile(p?.ms ?? [], 0.5).toFixed(0)} ms, p99 ${quantile(p?.ms ?? [], 0.99).toFixed(0)} ms, max ${Math.max(...(p?.ms ?? [0])).toFixed(0)} ms (${p?.ms.length ?? 0} probes)`;
    console.log(
      `[faults] storm while an engine is killed: ${STORM} alerts on ${STORM_HOSTS} hosts published in ${stormOut} ms, engine-a SIGKILLed halfway; survivor held all ${ALL_PARTITIONS} partitions after ${takeover} ms; ${pipeline.injected.length} faults paged once each, the last ${pagedBy} ms after the kill; all storm alerts held by ${heldBy} ms, all resolved ${resolvedIn} ms after the resolves began; notifier /-/healthy ${figures(notifierProbe)}; engine-b /healthz ${figures(engineProbe)}`,
    );
  });
});
