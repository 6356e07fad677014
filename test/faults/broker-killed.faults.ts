import { hostName } from '@gpualert/test-support';
import { newEnvelope, parseEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline } from './fault-pipeline.ts';
import { waitFor } from '../infra/wait-for.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * One step every 500 ms: an Xid 79 through the engine on an even host, and an alert straight to
 * the notifier on an odd host, resolved once it was paged. 24 steps are 72 events at the pager,
 * under PagerDuty's 120 a minute per routing key. The broker dies at step 8.
 */
const STEPS = 24;
const EVERY_MS = 500;
const KILL_AT_STEP = 8;

/** An Xid injected: when it was published and when Kafka acknowledged it. */
interface XidSent {
  readonly host: string;
  readonly gpu: number;
  readonly sentAt: number;
  ackedAt?: number;
}

function alert(i: number, status: 'firing' | 'resolved'): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    host: hostName(2 * i + 1),
    source: 'faults/broker-killed',
    labels: { cluster: 'lab' },
    data: {
      fingerprint: `brokerkill${String(i).padStart(4, '0')}`,
      status,
      severity: 'critical',
      category: 'xid',
      rule: 'kernel-event',
      summary: `Xid 79 on ${hostName(2 * i + 1)} (step ${i})`,
      starts_at: new Date().toISOString(),
      evidence: [],
    },
  });
}

/** The `__consumer_offsets` partition that holds a group, as Kafka picks it: `abs(groupId.hashCode()) % partitions` (Java's String hash). */
function offsetsPartitionOf(group: string, partitions: number): number {
  let hash = 0;
  for (let i = 0; i < group.length; i += 1) hash = (Math.imul(hash, 31) + group.charCodeAt(i)) | 0;
  return (hash === -2_147_483_648 ? 0 : Math.abs(hash)) % partitions;
}

/** The node that coordinates a consumer group: the leader of its `__consumer_offsets` partition. */
async function coordinatorOf(admin: Admin, group: string): Promise<number> {
  const [offsets] = (await admin.fetchTopicMetadata({ topics: ['__consumer_offsets'] })).topics;
  const partition = offsetsPartitionOf(group, offsets?.partitions.length ?? 0);
  const leader = offsets?.partitions.find((p) => p.partitionId === partition)?.leader;
  if (leader === undefined) throw new Error(`no leader for __consumer_offsets-${partition} (group ${group})`);
  return leader;
}

/** Each partition of these topics: its leader, how many replicas it has and how many are in sync. */
async function replication(admin: Admin, topics: readonly string[]): Promise<{ name: string; leader: number; replicas: number; isr: number }[]> {
  const { topics: described } = await admin.fetchTopicMetadata({ topics: [...topics] });
  return described.flatMap((t) =>
    t.partitions.map((p) => ({ name: `${t.name}-${p.partitionId}`, leader: p.leader, replicas: p.replicas.length, isr: p.isr.length })),
  );
}

describe('one Kafka broker of three killed under steady load', () => {
  let pipeline: FaultPipeline;
  let admin: Admin;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start({ brokers: 3 });
    admin = new Kafka({ brokers: pipeline.broker.brokers.split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await pipeline.startService('notifier', ['notifier']);
    await pipeline.startService('engine', ['engine']);
  });
  afterAll(async () => {
    await admin?.disconnect().catch(() => {});
    await pipeline?.close();
  });

  it('SIGKILL to the broker that coordinates the engine group: every fault paged once, every resolve sent, nothing Kafka acknowledged lost', async () => {
    const topics = Object.values(TOPICS).map((t) => `${pipeline.prefix}${t}`);
    // What gpualert created on three brokers: three replicas of every partition, all in sync.
    const before = await replication(admin, topics);
    expect(before.filter((p) => p.replicas !== 3 || p.isr !== 3)).toEqual([]);

    pipeline.startLoad();
    await pause(3_000);
    const victim = await coordinatorOf(admin, `${pipeline.prefix}gpualert-engine`);
    const alertsLed = before.filter((p) => p.name.startsWith(`${pipeline.prefix}${TOPICS.alerts}-`) && p.leader === victim).length;
    const ledAll = before.filter((p) => p.leader === victim).length;

    // The load of faults: each Xid's publish and ack times, published without waiting so a stalled ack stalls nothing else.
    const xids: XidSent[] = [];
    const publishing: Promise<void>[] = [];
    const actions = (key: string) =>
      pipeline.vendors
        .of('pagerduty')
        .filter((r) => r.body.dedup_key === key)
        .map((r) => r.body.event_action);
    let killedAt = 0;
    for (let i = 0; i < STEPS; i += 1) {
      if (i === KILL_AT_STEP) {
        await pipeline.broker.kill(victim);
        killedAt = Date.now();
      }
      const xid: XidSent = { host: hostName(2 * i), gpu: i % 8, sentAt: Date.now() };
      xids.push(xid);
      publishing.push(pipeline.injectXid(2 * i, i % 8).then(() => void (xid.ackedAt = Date.now())));
      const firing = alert(i, 'firing');
      publishing.push(
        pipeline
          .publishDurably(TOPICS.alerts, [firing])
          .then(() => waitFor(() => actions(firing.data.fingerprint).includes('trigger'), `${firing.data.fingerprint} paged`, 120_000))
          .then(() => pipeline.publishDurably(TOPICS.alerts, [alert(i, 'resolved')])),
      );
      await pause(EVERY_MS);
    }

    // Consumers resumed: both groups caught up (lag 0) with a fault published after the kill paged.
    const pagedAt = (x: XidSent) =>
      pipeline.vendors
        .of('pagerduty')
        .find((r) => r.body.event_action === 'trigger' && r.body.payload.source === x.host && r.body.payload.component === `GPU ${x.gpu}`)?.at;
    const afterKill = xids.slice(KILL_AT_STEP);
    let caughtUpAt = 0;
    let seen = 'nothing yet';
    await waitFor(
      async () => {
        const paged = afterKill.filter((x) => pagedAt(x) !== undefined).length;
        const lag = await Promise.all([
          pipeline.lag('gpualert-engine', [TOPICS.gpuSamples, TOPICS.kernelEvents]),
          pipeline.lag('gpualert-notifier', [TOPICS.alerts]),
        ]).catch((error: Error) => [error.message]);
        seen = `${paged} faults published after the kill paged; lag (engine, notifier) ${lag.join(', ')}`;
        if (paged === 0 || lag.some((n) => n !== 0)) return false;
        caughtUpAt = Date.now();
        return true;
      },
      'the engine and the notifier to catch up after the kill',
      120_000,
    ).catch((error: Error) => {
      const outputs = [...pipeline.services].map(([name, s]) => `--- ${name}:\n${s.output().slice(-6000)}`).join('\n');
      throw new Error(`${error.message} (${seen})\n${outputs}`);
    });
    await Promise.all(publishing);
    await pipeline.waitForPages(120_000);
    const direct = new Set(Array.from({ length: STEPS }, (_, i) => alert(i, 'firing').data.fingerprint));
    await waitFor(() => [...direct].every((k) => actions(k).at(-1) === 'resolve'), 'every alert resolved at the pager', 90_000);

    // The killed broker back: it catches up and rejoins every ISR.
    const restartedAt = Date.now();
    await pipeline.broker.restart(victim);
    await waitFor(async () => (await replication(admin, topics)).every((p) => p.isr === 3), 'every partition in sync on three brokers again', 90_000);
    const inSyncAfter = Date.now() - restartedAt;
    await pipeline.stopLoad();
    await pipeline.waitCaughtUp(90_000);

    // Every fault paged once, by dedup key; every alert's last word at the pager is its resolve.
    const pages = pipeline.pages();
    const xidPages = [...pages].filter(([key]) => !direct.has(key)).map(([, p]) => p);
    expect(xidPages.map((p) => `${p.host} ${p.component}`).sort()).toEqual(pipeline.expectedFaults());
    const twice = [...pages.values()].filter((p) => p.triggers > 1).length;
    expect(twice).toBe(0);
    for (const key of direct) expect(actions(key), key).toEqual(['trigger', 'resolve']);
    expect(await pipeline.deadletters()).toBe(0);
    // The hosts never stopped reporting: none may be called down for the broker's death.
    expect(await pipeline.alertsOf('host-absent')).toEqual([]);

    // Nothing Kafka acknowledged is missing from it.
    const onKafka = new Map<string, number>();
    for (const topic of [TOPICS.gpuSamples, TOPICS.hostInventory, TOPICS.kernelEvents, TOPICS.alerts]) {
      for (const m of await pipeline.bus.read(topic)) {
        const parsed = parseEnvelope(m.value);
        if (parsed.ok) onKafka.set(parsed.value.id, (onKafka.get(parsed.value.id) ?? 0) + 1);
      }
    }
    const lost = [...pipeline.acked].filter((id) => !onKafka.has(id));
    expect(lost).toEqual([]);
    const writtenTwice = [...onKafka.values()].filter((n) => n > 1).length;

    const firstPage = Math.min(...afterKill.map((x) => pagedAt(x) ?? Infinity)) - killedAt;
    const lastPage = Math.max(...afterKill.map((x) => pagedAt(x) ?? Infinity)) - killedAt;
    const longestAck = Math.max(...afterKill.map((x) => (x.ackedAt ?? Infinity) - x.sentAt));
    const requests = pipeline.vendors.of('pagerduty').length;
    console.log(
      `[faults] Kafka broker ${victim} of 3 SIGKILLed (the engine group's coordinator, leader of ${ledAll} partitions, ${alertsLed} of them alerts): ` +
        `longest publish ack after the kill ${longestAck} ms; first page of a fault published after the kill ${firstPage} ms after it, the last ${lastPage} ms; ` +
        `engine and notifier lag 0 again ${caughtUpAt - killedAt} ms after it; ${STEPS} Xid faults and ${STEPS} alerts: ${requests} requests at the pager, ` +
        `duplicate triggers ${twice}; ${pipeline.acked.size} envelopes acked (${pipeline.published} samples), ${lost.length} missing, ${writtenTwice} written twice, ` +
        `${pipeline.publishRetries} publishes retried; the broker back in every ISR ${inSyncAfter} ms after its restart`,
    );
  });
});
