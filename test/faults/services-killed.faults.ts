import { TOPICS } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline } from './fault-pipeline.ts';
import { waitFor } from '../infra/wait-for.ts';
import { ENGINE_INPUT_TOPICS } from '@gpualert/engine-service';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('services killed under steady load', () => {
  let pipeline: FaultPipeline;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start();
  });
  afterAll(async () => pipeline?.close());

  it('the engine killed with SIGKILL mid-stream and restarted: every fault paged once, nothing left unjudged', async () => {
    await pipeline.startService('notifier', ['notifier']);
    await pipeline.startService('engine', ['engine']);
    pipeline.startLoad();
    await pause(3_000);
    await pipeline.injectXid(1, 2);
    await pipeline.injectXid(5, 7);
    await pipeline.waitForPages();
    await pipeline.injectXid(9, 0); // in flight when the engine dies
    await pipeline.kill('engine');
    await pipeline.injectXid(13, 4); // while no engine runs
    await pause(2_000);
    await pipeline.startService('engine', ['engine']);
    await pipeline.injectXid(17, 3);
    await pipeline.waitForPages();
    await pause(3_000);
    await pipeline.stopLoad();
    await pipeline.waitCaughtUp();
    expect(pipeline.pagedFaults()).toEqual(pipeline.expectedFaults());
    expect(await pipeline.deadletters()).toBe(0);
    console.log(
      `[faults] engine SIGKILL: ${pipeline.published} samples acked, ${pipeline.injected.length} faults, pages ${JSON.stringify([...pipeline.pages().values()].map((p) => p.triggers))}`,
    );
  });

  it('the notifier killed mid-send and restarted: the page in flight is sent again under the same dedup key, none lost', async () => {
    const before = pipeline.injected.length;
    pipeline.startLoad();
    pipeline.vendors.fail('pagerduty', 'slow', { count: 1 });
    const arrivals = pipeline.vendors.arrivals.filter((a) => a.vendor === 'pagerduty').length;
    await pipeline.injectXid(21, 5);
    await waitFor(() => pipeline.vendors.arrivals.filter((a) => a.vendor === 'pagerduty').length > arrivals, 'the page to be on the wire', 30_000);
    await pipeline.kill('notifier');
    await pipeline.injectXid(25, 1); // while no notifier runs
    await pause(1_000);
    await pipeline.startService('notifier', ['notifier']);
    await pipeline.injectXid(29, 6);
    await pipeline.waitForPages();
    await pipeline.stopLoad();
    await pipeline.waitCaughtUp();
    await pause(16_000); // the slow request the dead notifier left behind lands at the vendor too
    expect(pipeline.pagedFaults()).toEqual(pipeline.expectedFaults());
    const pages = pipeline.pages();
    const resent = [...pages.values()].filter((p) => p.triggers > 1);
    // Only the page on the wire at the kill may arrive twice, and under its own dedup key.
    expect(resent.map((p) => p.host)).toEqual(resent.length === 0 ? [] : ['gpu-node-021']);
    console.log(
      `[faults] notifier SIGKILL mid-send: ${pipeline.injected.length - before} faults, triggers per dedup key ${JSON.stringify([...pages.values()].slice(-3).map((p) => p.triggers))}`,
    );
  });

  it('two engines in one group, one killed: the survivor takes over its partitions and judges its hosts', async () => {
    // Six partitions (GPUALERT_PARTITIONS) of every topic the engine reads.
    const ALL_PARTITIONS = 6 * ENGINE_INPUT_TOPICS.length;
    await pipeline.kill('engine', 'SIGTERM');
    pipeline.startLoad();
    const a = await pipeline.startService('engine-a', ['engine']);
    const b = await pipeline.startService('engine-b', ['engine']);
    // Both hold partitions once the group has rebalanced.
    const partitionsOf = FaultPipeline.partitionsHeld;
    await waitFor(
      () => partitionsOf(a) > 0 && partitionsOf(b) > 0 && partitionsOf(a) + partitionsOf(b) === ALL_PARTITIONS,
      'the two engines to share the partitions',
      60_000,
    );
    const shared = [partitionsOf(a), partitionsOf(b)];
    await pipeline.kill('engine-a');
    const killedAt = Date.now();
    // Faults on hosts spread over every partition, injected while engine-a is dead and before the group knows.
    for (const host of [2, 3, 4, 6, 7, 8, 10, 11]) await pipeline.injectXid(host, 0);
    await waitFor(() => partitionsOf(b) === ALL_PARTITIONS, 'the survivor to hold every partition', 60_000);
    const takeover = Date.now() - killedAt;
    await pipeline.waitForPages();
    await pipeline.stopLoad();
    await pipeline.waitCaughtUp();
    expect(pipeline.pagedFaults()).toEqual(pipeline.expectedFaults());
    expect(await pipeline.deadletters()).toBe(0);
    console.log(
      `[faults] two engines (${shared.join('+')} partitions), one SIGKILLed: survivor held all ${ALL_PARTITIONS} after ${takeover} ms; ${pipeline.published} samples acked in all`,
    );
  });
});
