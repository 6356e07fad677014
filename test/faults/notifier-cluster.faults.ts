import { envelopeMessage } from '@gpualert/bus';
import { hostName } from '@gpualert/test-support';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline } from './fault-pipeline.ts';
import { everyFaultPagedAndResolved, FAULTS, membersOf, pagerActions, pause, publishFaults, sentTwice } from './fault-pages.ts';
import { waitFor } from '../infra/wait-for.ts';

/** Maintenance notices: each its own webhook group (by host and category), told once by the cluster. */
const NOTICES = 3;
const PEER_TIMEOUT = '2s';

function alert(i: number, status: 'firing' | 'resolved', category: 'xid' | 'maintenance' = 'xid'): EnvelopeOf<'alert'> {
  // Notices on hosts of their own: a maintenance notice silences its host's pages while it lasts.
  const host = category === 'xid' ? hostName(i % 48) : hostName(100 + i);
  return newEnvelope({
    type: 'alert',
    host,
    source: 'faults/notifier-cluster',
    labels: { cluster: 'lab' },
    data: {
      fingerprint: `${category}-cluster${String(i).padStart(4, '0')}`,
      status,
      severity: category === 'xid' ? 'critical' : 'info',
      category,
      rule: category === 'xid' ? 'kernel-event' : 'provider-maintenance',
      summary: category === 'xid' ? `Xid 79 on ${host} (fault ${i})` : `maintenance on ${host}`,
      starts_at: new Date().toISOString(),
      evidence: [],
    },
  });
}

describe('notifier cluster', () => {
  let pipeline: FaultPipeline;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start();
  });
  afterAll(async () => pipeline?.close());

  it('three replicas (Alertmanager HA), the first SIGKILLed under load while the pager throttles: every fault paged and resolved, each group told once', async () => {
    const replica = (name: string) => pipeline.startService(name, ['notifier', '--replica', name, '--peer-timeout', PEER_TIMEOUT]);
    const replicas = [await replica('notifier-0'), await replica('notifier-1'), await replica('notifier-2')];
    await waitFor(() => replicas.every((r) => membersOf(r).length === 3), 'every replica to see the three', 60_000);
    await pipeline.bus.publish(
      TOPICS.alerts,
      Array.from({ length: NOTICES }, (_, i) => envelopeMessage(alert(i, 'firing', 'maintenance'))),
    );
    const started = Date.now();
    let killedAt = 0;
    await publishFaults(pipeline, alert, async (i) => {
      // The pager throttles (429) for 4 s around the kill: notifier-0 dies with pages and resolves queued in its outbox.
      if (i === FAULTS / 2 - 6) pipeline.vendors.fail('pagerduty', '429', { forMs: 4_000 });
      if (i === FAULTS / 2) {
        await pipeline.kill('notifier-0');
        killedAt = Date.now() - started;
      }
    });
    await everyFaultPagedAndResolved(pipeline, alert, 90_000, () => `--- notifier-1:\n${replicas[1]!.output().slice(-3000)}`);
    const lastPage = Date.now() - started;
    // Past both survivors' waits: anything sent twice lands too.
    await pause(6_000);
    const perKey = pagerActions(pipeline, alert);
    for (const [key, actions] of perKey) expect(actions.at(-1), `${key}: ${actions.join(',')}`).toBe('resolve');
    // Each fault triggered once: only what was on the wire when notifier-0 died (one send at a time per receiver) may arrive twice.
    const twice = sentTwice(perKey, 'trigger');
    const resolvedTwice = sentTwice(perKey, 'resolve');
    expect(twice.length).toBeLessThanOrEqual(1);
    // A resolve may come twice (harmless to a pager): a page adopted from notifier-0's outbox whose fault resolved since is resolved again behind it, as in the failover case.
    // Each maintenance group told once by the cluster, whichever replica told it.
    const notices = pipeline.vendors.of('webhook');
    expect(notices).toHaveLength(NOTICES);
    // The survivors saw the first leave.
    await waitFor(() => membersOf(replicas[1]!).join() === 'notifier-1,notifier-2', 'notifier-1 to see two members', 30_000);
    const adopted = replicas
      .slice(1)
      .map(
        (r) =>
          r
            .output()
            .split('\n')
            .filter((l) => l.includes('"outbox_adopted"')).length,
      )
      .reduce((a, b) => a + b, 0);
    console.log(
      `[faults] notifier cluster: 3 replicas, peer timeout ${PEER_TIMEOUT}; notifier-0 SIGKILLed at ${killedAt} ms; ${FAULTS} faults paged and resolved by ${lastPage} ms, the resolve last for each dedup key; sent twice: ${twice.length} triggers, ${resolvedTwice.length} resolves; ${notices.length} webhook group messages for ${NOTICES} groups; ${adopted} outbox entries adopted`,
    );
  });
});
