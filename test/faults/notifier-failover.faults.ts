import { envelopeMessage } from '@gpualert/bus';
import { hostName } from '@gpualert/test-support';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline, type Service } from './fault-pipeline.ts';
import { waitFor } from '../infra/wait-for.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Faults published, one every 250 ms over 48 hosts (every partition), each resolved 2.5 s after it
 * fired: 80 events, under PagerDuty's documented 120 a minute per routing key (the loopback pager
 * answers 429 past it).
 */
const FAULTS = 40;
const EVERY_MS = 250;
const RESOLVE_AFTER_MS = 2_500;

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
    // The load: faults fire and resolve on every partition, before, during and after the kill.
    const started = Date.now();
    let killedAt = 0;
    const load = (async () => {
      const resolves: Promise<void>[] = [];
      for (let i = 0; i < FAULTS; i += 1) {
        await pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(alert(i, 'firing'))]);
        resolves.push(pause(RESOLVE_AFTER_MS).then(() => pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(alert(i, 'resolved'))])));
        // The pager throttles (429) for 4 s around the kill: notifier-a dies with pages and resolves queued in the outbox.
        if (i === FAULTS / 2 - 6) pipeline.vendors.fail('pagerduty', '429', { forMs: 4_000 });
        if (i === FAULTS / 2) {
          await pipeline.kill('notifier-a');
          killedAt = Date.now() - started;
        }
        await pause(EVERY_MS);
      }
      await Promise.all(resolves);
    })();
    await load;
    const fingerprints = Array.from({ length: FAULTS }, (_, i) => `failover${String(i).padStart(4, '0')}`);
    const events = () => pipeline.vendors.of('pagerduty').filter((r) => fingerprints.includes(r.body.dedup_key));
    const keysWith = (action: string) =>
      new Set(
        events()
          .filter((r) => r.body.event_action === action)
          .map((r) => r.body.dedup_key),
      );
    await waitFor(
      () => keysWith('trigger').size === FAULTS && keysWith('resolve').size === FAULTS,
      `every fault paged and resolved (paged ${keysWith('trigger').size}, resolved ${keysWith('resolve').size} of ${FAULTS})`,
      90_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n--- notifier-b:\n${b.output().slice(-3000)}`);
    });
    await pause(3_000); // anything sent twice lands too
    // Per dedup key: the pager's last word is the resolve (no incident left open), whatever order a takeover sent things in.
    const perKey = new Map<string, string[]>();
    for (const r of events()) perKey.set(r.body.dedup_key, [...(perKey.get(r.body.dedup_key) ?? []), r.body.event_action]);
    for (const [key, actions] of perKey) expect(actions.at(-1), `${key}: ${actions.join(',')}`).toBe('resolve');
    // Each fault triggered once: only what was on the wire when notifier-a died (one send at a time per receiver) may arrive twice.
    const twice = [...perKey].filter(([, actions]) => actions.filter((x) => x === 'trigger').length > 1);
    expect(twice.length).toBeLessThanOrEqual(1);
    const resolvedTwice = [...perKey].filter(([, actions]) => actions.filter((x) => x === 'resolve').length > 1);
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
