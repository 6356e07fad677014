import { hostName } from '@gpualert/test-support';
import { newEnvelope, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline, type Service } from './fault-pipeline.ts';
import { everyFaultPagedAndResolved, FAULTS, pagerActions, pause, publishFaults, sentTwice } from './fault-pages.ts';
import { waitFor } from '../infra/wait-for.ts';

function alert(i: number, status: 'firing' | 'resolved'): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    host: hostName(i % 48),
    source: 'faults/notifier-failover',
    labels: { cluster: 'lab' },
    data: {
      fingerprint: `failover${String(i).padStart(4, '0')}`,
      status,
      severity: 'critical',
      category: 'xid',
      rule: 'kernel-event',
      summary: `Xid 79 on ${hostName(i % 48)} (fault ${i})`,
      starts_at: new Date().toISOString(),
      evidence: [],
    },
  });
}

/** The alerts partitions a notifier holds, as its last `group_joined` line for the notifiers' group says (its console's samples consumer joins a group of its own). */
function partitionsOf(service: Service): number {
  const joins = service
    .output()
    .split('\n')
    .filter((l) => l.includes('"group_joined"'))
    .map((l) => JSON.parse(l) as { partitions: number; group: string });
  return joins.filter((j) => j.group.endsWith('gpualert-notifier')).at(-1)?.partitions ?? 0;
}

describe('notifier failover', () => {
  let pipeline: FaultPipeline;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start();
  });
  afterAll(async () => pipeline?.close());

  it('two notifiers on one Redis and one group, one SIGKILLed under load: every fault paged once by dedup key, every resolve sent', async () => {
    const a = await pipeline.startService('notifier-a', ['notifier']);
    const b = await pipeline.startService('notifier-b', ['notifier']);
    await waitFor(
      () => partitionsOf(a) > 0 && partitionsOf(b) > 0 && partitionsOf(a) + partitionsOf(b) === 6,
      'the two notifiers to share the alerts partitions',
      60_000,
    );
    const shared = [partitionsOf(a), partitionsOf(b)];
    // The load: faults fire and resolve on every partition (48 hosts), before, during and after the kill.
    const started = Date.now();
    let killedAt = 0;
    await publishFaults(pipeline, alert, async (i) => {
      // The pager throttles (429) for 4 s around the kill: notifier-a dies with pages and resolves queued in the outbox.
      if (i === FAULTS / 2 - 6) pipeline.vendors.fail('pagerduty', '429', { forMs: 4_000 });
      if (i === FAULTS / 2) {
        await pipeline.kill('notifier-a');
        killedAt = Date.now() - started;
      }
    });
    await everyFaultPagedAndResolved(pipeline, alert, 90_000, () => `--- notifier-b:\n${b.output().slice(-3000)}`);
    await pause(3_000); // anything sent twice lands too
    // Per dedup key: the pager's last word is the resolve (no incident left open), whatever order a takeover sent things in.
    const perKey = pagerActions(pipeline, alert);
    for (const [key, actions] of perKey) expect(actions.at(-1), `${key}: ${actions.join(',')}`).toBe('resolve');
    // Each fault triggered once: only what was on the wire when notifier-a died (one send at a time per receiver) may arrive twice.
    const twice = sentTwice(perKey, 'trigger');
    expect(twice.length).toBeLessThanOrEqual(1);
    const resolvedTwice = sentTwice(perKey, 'resolve');
    // What notifier-a had queued and not sent was taken over (the path this case is about was taken).
    const adopted = b
      .output()
      .split('\n')
      .filter((l) => l.includes('"outbox_adopted"')).length;
    expect(adopted).toBeGreaterThan(0);
    console.log(
      `[faults] notifier failover: ${shared.join('+')} partitions, notifier-a SIGKILLed at ${killedAt} ms; ${FAULTS} faults paged and resolved, the resolve last for each dedup key; sent twice: ${twice.length} triggers, ${resolvedTwice.length} resolves; ${adopted} outbox entries adopted by notifier-b`,
    );
  });
});
