import { hostName } from '@gpualert/test-support';
import { newEnvelope, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline } from './fault-pipeline.ts';
import { SentinelGroup } from '../infra/redis-sentinel.ts';
import { everyFaultPagedAndResolved, FAULTS, pagerActions, pause, publishFaults, sentTwice } from './fault-pages.ts';

function alert(i: number, status: 'firing' | 'resolved'): EnvelopeOf<'alert'> {
  const host = hostName(i % 48);
  return newEnvelope({
    type: 'alert',
    host,
    source: 'faults/redis-failover',
    labels: { cluster: 'lab' },
    data: {
      fingerprint: `sentinel${String(i).padStart(4, '0')}`,
      status,
      severity: 'critical',
      category: 'xid',
      rule: 'kernel-event',
      summary: `Xid 79 on ${host} (fault ${i})`,
      starts_at: new Date().toISOString(),
      evidence: [],
    },
  });
}

describe('Redis master killed under Sentinel', () => {
  let pipeline: FaultPipeline;
  let sentinel: SentinelGroup;
  beforeAll(async () => {
    [pipeline, sentinel] = await Promise.all([FaultPipeline.start(), SentinelGroup.start()]);
    // The services find Redis through the Sentinels, as REDIS_URL=redis+sentinel://… says.
    pipeline.env.REDIS_URL = sentinel.url;
  });
  afterAll(async () => {
    await pipeline?.close();
    await sentinel?.stop();
  });

  it('two notifier replicas under load while the master is SIGKILLed: every fault paged and resolved, the replica promoted, the notifiers going on', async () => {
    const replica = (name: string) => pipeline.startService(name, ['notifier', '--replica', name, '--peer-timeout', '2s']);
    const notifiers = [await replica('notifier-0'), await replica('notifier-1')];
    const masterBefore = await sentinel.masterPort();
    const started = Date.now();
    let killedAt = 0;
    await publishFaults(pipeline, alert, async (i) => {
      if (i === FAULTS / 2) {
        await sentinel.master.stop();
        killedAt = Date.now() - started;
      }
    });
    await everyFaultPagedAndResolved(pipeline, alert, 120_000, () => `--- notifier-0:\n${notifiers[0]!.output().slice(-3000)}`);
    const allPaged = Date.now() - started;
    await pause(5_000); // past the second replica's wait: anything sent twice lands too
    const masterAfter = await sentinel.masterPort();
    expect(masterAfter).not.toBe(masterBefore);
    expect(masterAfter).toBe(sentinel.replica.port);
    const perKey = pagerActions(pipeline, alert);
    for (const [key, actions] of perKey) expect(actions.at(-1), `${key}: ${actions.join(',')}`).toBe('resolve');
    const twice = sentTwice(perKey, 'trigger');
    const failedSteps = notifiers.map(
      (n) =>
        n
          .output()
          .split('\n')
          .filter((l) => /notifier_flush_failed|handler_failed|batch_failed/.test(l)).length,
    );
    for (const n of notifiers) expect(n.exitCode).toBeNull();
    console.log(
      `[faults] Redis master SIGKILLed under Sentinel at ${killedAt} ms (down-after 1 s): replica promoted; ${FAULTS} faults paged and resolved by ${allPaged} ms; triggers sent twice: ${twice.length}; failed steps retried: ${failedSteps.join('+')}`,
    );
  });
});
