import { hostName } from '@gpualert/test-support';
import { envelopeMessage } from '@gpualert/bus';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline } from './fault-pipeline.ts';
import { everyFaultPagedAndResolved, membersOf, pagerActions, pause, publishFaults, sentTwice } from './fault-pages.ts';
import { PartitionProxy } from '../infra/tcp-partition.ts';
import { waitFor } from '../infra/wait-for.ts';

const PEER_TIMEOUT = '2s';
const CUT_MS = 30_000;

/**
 * A critical alert of one of two loads (`during` spans the partition, `after` follows the heal), on
 * a host of the fleet; as the engine says them, a fault's resolve carries its firing's `starts_at`
 * (one episode per fault of each faultOf: a second faultOf is the faults firing again).
 */
function faultOf(load: 'during' | 'after') {
  const starts = new Map<number, string>();
  return (i: number, status: 'firing' | 'resolved'): EnvelopeOf<'alert'> => {
    const host = hostName(i % 48);
    const startsAt = starts.get(i) ?? new Date().toISOString();
    starts.set(i, startsAt);
    return newEnvelope({
      type: 'alert',
      host,
      source: 'faults/notifier-partition',
      labels: { cluster: 'lab' },
      data: {
        fingerprint: `xid-partition-${load}-${String(i).padStart(4, '0')}`,
        status,
        severity: 'critical',
        category: 'xid',
        rule: 'kernel-event',
        summary: `Xid 79 on ${host} (fault ${i}, ${load})`,
        starts_at: startsAt,
        evidence: [],
      },
    });
  };
}

describe('notifier cluster partitioned', () => {
  let pipeline: FaultPipeline;
  let proxy: PartitionProxy;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start();
    const port = Number(new URL(pipeline.redis.url).port);
    proxy = await PartitionProxy.start({ host: '127.0.0.1', port });
  });
  afterAll(async () => {
    await proxy?.close();
    await pipeline?.close();
  });

  it('two replicas cut off from each other (the first from the shared Redis) for 30 s under load: every fault paged and resolved, duplicates counted, nothing lost', async () => {
    // notifier-0 reaches Redis, where the cluster coordinates, only through the proxy; Kafka and the pager it keeps.
    const first = await pipeline.startService('notifier-0', ['notifier', '--replica', 'notifier-0', '--peer-timeout', PEER_TIMEOUT], 'group_joined', {
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
    });
    const second = await pipeline.startService('notifier-1', ['notifier', '--replica', 'notifier-1', '--peer-timeout', PEER_TIMEOUT]);
    await waitFor(() => [first, second].every((r) => membersOf(r).length === 2), 'both replicas to see the two', 60_000);

    const during = faultOf('during');
    const started = Date.now();
    let healed: Promise<void> = Promise.resolve();
    let alone = 0;
    await publishFaults(pipeline, during, (i) => {
      // A quarter of the faults out with the cluster whole; the rest, and every resolve, while it is cut.
      if (i !== 10) return;
      proxy.partition();
      const cutAt = Date.now();
      healed = (async () => {
        // The second sees the first's heartbeat lapse and sends alone.
        await waitFor(() => membersOf(second).join() === 'notifier-1', 'notifier-1 to see itself alone', CUT_MS);
        alone = Date.now() - cutAt;
        await pause(CUT_MS - (Date.now() - cutAt));
        proxy.heal();
      })();
    });
    // Every fault paged and resolved while the partition still holds: by the replica that can coordinate.
    await everyFaultPagedAndResolved(pipeline, during, 60_000, () => `--- notifier-1:\n${second.output().slice(-3000)}`);
    const toldWhileCut = proxy.cut;
    const toldBy = Date.now() - started;
    await healed;
    // The first is back: both see the two, and the first sends again as position 0.
    await waitFor(() => [first, second].every((r) => membersOf(r).length === 2), 'both replicas to see the two again', 60_000);
    // Whatever the first still had to send from before and during the cut lands, then a load with the cluster whole.
    await pause(10_000);
    const after = faultOf('after');
    await publishFaults(pipeline, after);
    await everyFaultPagedAndResolved(pipeline, after, 90_000, () => `--- notifier-0:\n${first.output().slice(-3000)}`);
    await pause(6_000);
    const duringActions = pagerActions(pipeline, during);

    // Faults of the cut that fire again now, under the same fingerprints: each is news, paged and resolved again (the cut's resolves remembered must not hide them).
    const AGAIN = 5;
    const refire = faultOf('during');
    for (let i = 0; i < AGAIN; i += 1) await pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(refire(20 + i, 'firing'))]);
    await pause(1_000);
    for (let i = 0; i < AGAIN; i += 1) await pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(refire(20 + i, 'resolved'))]);
    const triggersOf = (i: number) =>
      pagerActions(pipeline, during)
        .get(during(i, 'firing').data.fingerprint)
        ?.filter((a) => a === 'trigger').length ?? 0;
    const before = Array.from(
      { length: AGAIN },
      (_, i) => duringActions.get(during(20 + i, 'firing').data.fingerprint)?.filter((a) => a === 'trigger').length ?? 0,
    );
    await waitFor(
      () => Array.from({ length: AGAIN }, (_, i) => triggersOf(20 + i)).every((n, i) => n > (before[i] ?? 0)),
      'the faults fired again to be paged again',
      60_000,
    );
    await pause(6_000);
    const again = pagerActions(pipeline, during);
    for (let i = 0; i < AGAIN; i += 1) {
      const actions = again.get(during(20 + i, 'firing').data.fingerprint) ?? [];
      expect(actions.filter((a) => a === 'trigger').length, actions.join(',')).toBeGreaterThan(
        duringActions.get(during(20 + i, 'firing').data.fingerprint)?.filter((a) => a === 'trigger').length ?? 0,
      );
      expect(actions.at(-1), actions.join(',')).toBe('resolve');
    }

    const afterActions = pagerActions(pipeline, after);
    // Loss never: each fault's last word at the pager is its resolve, even where it was told twice.
    for (const [key, actions] of [...duringActions, ...afterActions]) expect(actions.at(-1), `${key}: ${actions.join(',')}`).toBe('resolve');
    // Across the partition: the first, back, reads the cut's backlog against the shared page log (a
    // fault the second paged and resolved is old news); only a page the first sent in the step the
    // cut caught (its log write hung) may go out twice.
    expect(sentTwice(duringActions, 'trigger').length).toBeLessThanOrEqual(4);
    // With the cluster whole again, each page and resolve once.
    expect(sentTwice(afterActions, 'trigger')).toEqual([]);
    expect(sentTwice(afterActions, 'resolve')).toEqual([]);
    console.log(
      `[faults] notifier partition: 2 replicas, peer timeout ${PEER_TIMEOUT}, notifier-0 cut from Redis for ${CUT_MS / 1000} s; notifier-1 alone after ${alone} ms; ${duringActions.size} faults paged and resolved by ${toldBy} ms (${toldWhileCut ? 'while cut' : 'after the heal'}); sent twice across the partition: ${sentTwice(duringActions, 'trigger').length} triggers, ${sentTwice(duringActions, 'resolve').length} resolves; after the heal ${afterActions.size} faults, each trigger and resolve once; ${AGAIN} faults of the cut fired again and were paged and resolved again`,
    );
  });
});
