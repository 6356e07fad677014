import { envelopeMessage } from '@gpualert/bus';
import { hostName } from '@gpualert/test-support';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline } from './fault-pipeline.ts';
import { SentinelGroup } from '../infra/redis-sentinel.ts';
import { waitFor } from '../infra/wait-for.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Faults published one every 250 ms over 48 hosts, each resolved 2.5 s after it fired: 80 events, under PagerDuty's 120 a minute. */
const FAULTS = 40;
const EVERY_MS = 250;
const RESOLVE_AFTER_MS = 2_500;

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
    const resolves: Promise<void>[] = [];
    for (let i = 0; i < FAULTS; i += 1) {
      await pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(alert(i, 'firing'))]);
      resolves.push(pause(RESOLVE_AFTER_MS).then(() => pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(alert(i, 'resolved'))])));
      if (i === FAULTS / 2) {
        await sentinel.master.stop();
        killedAt = Date.now() - started;
      }
      await pause(EVERY_MS);
    }
    await Promise.all(resolves);
    const fingerprints = new Set(Array.from({ length: FAULTS }, (_, i) => alert(i, 'firing').data.fingerprint));
    const events = () => pipeline.vendors.of('pagerduty').filter((r) => fingerprints.has(r.body.dedup_key));
    const keysWith = (action: string) => new Set(events().flatMap((r) => (r.body.event_action === action ? [r.body.dedup_key] : [])));
    await waitFor(
      () => keysWith('trigger').size === FAULTS && keysWith('resolve').size === FAULTS,
      `every fault paged and resolved (paged ${keysWith('trigger').size}, resolved ${keysWith('resolve').size} of ${FAULTS})`,
      120_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n--- notifier-0:\n${notifiers[0]!.output().slice(-3000)}`);
    });
    const allPaged = Date.now() - started;
    await pause(5_000); // past the second replica's wait: anything sent twice lands too
    const masterAfter = await sentinel.masterPort();
    expect(masterAfter).not.toBe(masterBefore);
    expect(masterAfter).toBe(sentinel.replica.port);
    const perKey = new Map<string, string[]>();
    for (const r of events()) perKey.set(r.body.dedup_key, [...(perKey.get(r.body.dedup_key) ?? []), r.body.event_action]);
    for (const [key, actions] of perKey) expect(actions.at(-1), `${key}: ${actions.join(',')}`).toBe('resolve');
    const twice = [...perKey].filter(([, actions]) => actions.filter((x) => x === 'trigger').length > 1);
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
