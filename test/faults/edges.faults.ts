import { randomUUID } from 'node:crypto';
import { DEADLETTER_HEADERS, envelopeMessage, pipelineFingerprint } from '@gpualert/bus';
import { hostName } from '@gpualert/test-support';
import { sign } from '@gpualert/intake';
import { Partitioners } from 'kafkajs';
import { newEnvelope, parseEnvelope, TOPICS } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envNumber } from '../infra/env-number.ts';
import { FaultPipeline, pciOf } from './fault-pipeline.ts';
import { waitFor } from '../infra/wait-for.ts';

/** The partition Kafka's default partitioner (murmur2 of the key) gives a host among the suite's 6. */
function kafkaPartition(host: string): number {
  const partitionMetadata = Array.from({ length: 6 }, (_, partitionId) => ({ partitionErrorCode: 0, partitionId, leader: 0, replicas: [0], isr: [0] }));
  return Partitioners.DefaultPartitioner()({ topic: 't', partitionMetadata, message: { key: host, value: '' } });
}
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long the pager answers 500, then 429; the issue asks for minutes, CI runs 20 s each. */
const RECEIVER_DOWN_MS = envNumber('GPUALERT_FAULTS_RECEIVER_MS', 20_000);
const INTAKE_SECRET = `whsec_${Buffer.from('the fault suite intake secret!!!').toString('base64')}`;

describe('the edges: a failing vendor and a flooded intake', () => {
  let pipeline: FaultPipeline;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start();
    pipeline.env.GPUALERT_INTAKE_SECRETS = INTAKE_SECRET;
    pipeline.env.GPUALERT_INTAKE_PORT = '0';
    pipeline.env.GPUALERT_INTAKE_LISTEN = '127.0.0.1';
    await pipeline.startService('notifier', ['notifier']);
    await pipeline.startService('engine', ['engine']);
  });
  afterAll(async () => pipeline?.close());

  it(
    `the pager answering 500 for ${RECEIVER_DOWN_MS / 1000} s, then 429 for as long: every page arrives once it recovers, none twice`,
    async () => {
      pipeline.startLoad();
      await pause(2_000);
      const started = Date.now();
      pipeline.vendors.fail('pagerduty', '500', { forMs: RECEIVER_DOWN_MS });
      for (const [host, gpu] of [
        [2, 0],
        [6, 1],
        [11, 2],
      ] as const)
        await pipeline.injectXid(host, gpu);
      await pause(RECEIVER_DOWN_MS - (Date.now() - started));
      pipeline.vendors.fail('pagerduty', '429', { forMs: RECEIVER_DOWN_MS });
      for (const [host, gpu] of [
        [15, 3],
        [20, 4],
        [31, 5],
      ] as const)
        await pipeline.injectXid(host, gpu);
      await pause(RECEIVER_DOWN_MS);
      const healedAt = Date.now();
      const refused = pipeline.vendors.arrivals.filter((a) => a.vendor === 'pagerduty').length;
      expect(pipeline.pages().size).toBe(0);
      // Backoff doubles to at most a minute, so the last retry lands within a minute of recovery.
      await pipeline.waitForPages(90_000);
      const recovered = Date.now() - healedAt;
      await pipeline.stopLoad();
      await pipeline.waitCaughtUp();
      expect(pipeline.pagedFaults()).toEqual(pipeline.expectedFaults());
      expect([...pipeline.pages().values()].map((p) => p.triggers)).toEqual(pipeline.injected.map(() => 1));
      // Each failed attempt is on record for the timeline.
      const records = (await pipeline.bus.read(TOPICS.notifications))
        .map((m) => parseEnvelope(m.value))
        .flatMap((r) => (r.ok && r.value.type === 'notification' ? [r.value.data] : []));
      const failed = records.filter((r) => r.receiver === 'pager' && r.outcome === 'failed');
      // Every answer the pager refused with is on record. Whether a retry lands inside the 429 window
      // depends on the backoff (one receiver's queue waits on its oldest page), so 429 is checked when sent.
      const told = new Set(pipeline.vendors.refusals.filter((r) => r.vendor === 'pagerduty').map((r) => r.status));
      expect(told.has(500)).toBe(true);
      for (const status of told)
        expect(
          failed.some((r) => new RegExp(`\\b${status}\\b`).test(r.error ?? '')),
          `a failed attempt recorded with ${status}`,
        ).toBe(true);
      console.log(
        `[faults] pager 500 then 429 for ${(2 * RECEIVER_DOWN_MS) / 1000} s: ${refused} requests refused (${[...told].sort().join(' and ')} answered), ${failed.length} failed attempts recorded; every page within ${recovered} ms of recovery, each once`,
      );
    },
    2 * RECEIVER_DOWN_MS + 150_000,
  );

  it('a poison message in the middle of the steady load: every fault is still paged once, the poison is dead-lettered with its reason, and one pipeline alert fires', async () => {
    // The poison: an Xid for a host whose saved engine state the store cannot hand back (the key
    // holds a Redis hash: another tool wrote it). A state it can read but not use is rebuilt (issue
    // 22), so this is what still throws in the engine, every time, before anything is published;
    // nothing else on its partition is at fault.
    // On the partition of a host faulted after it, so a stalled partition would show as a missing page.
    const poisonHost = Array.from({ length: 64 }, (_, i) => `poison-${Date.now().toString(36)}-${i}`).find(
      (h) => kafkaPartition(h) === kafkaPartition(hostName(14)),
    )!;
    await pipeline.storeHashSet(`engine:host:${poisonHost}`, 'written-by', 'another tool');
    const poison = envelopeMessage(
      newEnvelope({
        type: 'kernel.event',
        host: poisonHost,
        source: 'kernel/fault-suite',
        data: {
          kind: 'xid',
          xid: 79,
          pci_bus: pciOf(0),
          severity: 'critical',
          message: 'NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.',
          count: 1,
        },
      }),
    );
    pipeline.startLoad();
    await pause(2_000);
    for (const [host, gpu] of [
      [3, 0],
      [9, 1],
    ] as const)
      await pipeline.injectXid(host, gpu);
    await pause(1_000);
    await pipeline.bus.publish(TOPICS.kernelEvents, [poison]);
    // Faults after the poison, one of them on its partition's neighbours: nothing may stall behind it.
    for (const [host, gpu] of [
      [14, 2],
      [27, 3],
      [40, 4],
    ] as const)
      await pipeline.injectXid(host, gpu);
    await pipeline.waitForPages(90_000);
    await pipeline.stopLoad();
    await pipeline.waitCaughtUp();
    expect(pipeline.pagedFaults()).toEqual(pipeline.expectedFaults());
    expect([...pipeline.pages().values()].map((p) => p.triggers)).toEqual(pipeline.injected.map(() => 1));
    expect([...pipeline.pages().values()].some((p) => p.host === poisonHost)).toBe(false);

    const dead = (await pipeline.bus.read(TOPICS.deadletter)).filter((m) => m.key === poisonHost);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.value.toString()).toBe(String(poison.value));
    expect(dead[0]!.headers[DEADLETTER_HEADERS.group]).toBe('gpualert-engine');
    expect(dead[0]!.headers[DEADLETTER_HEADERS.reason]).toMatch(/^handler of gpualert-engine failed: .*WRONGTYPE/);
    const fingerprint = pipelineFingerprint('gpualert-engine', TOPICS.kernelEvents);
    const pipelineAlerts = (await pipeline.bus.read(TOPICS.alerts))
      .map((m) => parseEnvelope(m.value))
      .flatMap((r) => (r.ok && r.value.type === 'alert' && r.value.data.category === 'pipeline' ? [r.value.data] : []));
    expect(pipelineAlerts.map((a) => [a.fingerprint, a.status, a.severity])).toEqual([[fingerprint, 'firing', 'error']]);
    // Routed like any other alert (here: recorded), and told once.
    let told: { receiver: string; outcome: string }[] = [];
    await waitFor(
      async () => {
        told = (await pipeline.bus.read(TOPICS.notifications))
          .map((m) => parseEnvelope(m.value))
          .flatMap((r) => (r.ok && r.value.type === 'notification' && r.value.data.fingerprints.includes(fingerprint) ? [r.value.data] : []));
        return told.length > 0;
      },
      'the pipeline alert to be notified',
      30_000,
    );
    await pause(2_000);
    expect(told.map((n) => [n.receiver, n.outcome])).toEqual([['record', 'sent']]);
    console.log(
      `[faults] poison message mid-load: ${pipeline.injected.length} faults paged once each, 1 dead letter (${dead[0]!.headers[DEADLETTER_HEADERS.attempts]} failed runs), 1 pipeline alert`,
    );
  });

  it('the intake flooded by many clients with valid, duplicate, badly signed and malformed deliveries: each event once on Kafka and once at the receiver', async () => {
    const intake = await pipeline.startService('intake', ['intake'], 'intake_listening');
    const port = Number(/"port":(\d+)/.exec(intake.output())?.[1]);
    const url = `http://127.0.0.1:${port}/v1/events/generic`;
    const run = `f${Date.now().toString(36)}`;
    const unique = 400;
    const windowStart = new Date(Date.now() + 3_600_000).toISOString();
    const eventBody = (i: number) =>
      JSON.stringify({
        event_id: `${run}-${i}`,
        kind: 'maintenance',
        status: 'scheduled',
        hosts: [`${run}-host-${i}`],
        window_start: windowStart,
        duration_seconds: 1800,
        description: `flood ${i}`,
      });
    const headers = (body: string, id = `msg_${randomUUID()}`, secret = INTAKE_SECRET) => {
      const at = Math.floor(Date.now() / 1000);
      return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(at), 'webhook-signature': sign(secret, id, at, body) };
    };
    type Delivery = {
      kind: 'valid' | 'same-id' | 'new-id' | 'bad-signature' | 'malformed' | 'unrecognised';
      event: number;
      body: string;
      headers: Record<string, string>;
    };
    const deliveries: Delivery[] = [];
    for (let i = 0; i < unique; i += 1) {
      const body = eventBody(i);
      const first = headers(body);
      deliveries.push({ kind: 'valid', event: i, body, headers: first });
      // The same delivery again (a sender that missed our answer), and the event under a new delivery id.
      if (i % 2 === 0) deliveries.push({ kind: 'same-id', event: i, body, headers: first });
      if (i % 3 === 0) deliveries.push({ kind: 'new-id', event: i, body, headers: headers(body) });
      if (i % 2 === 1)
        deliveries.push({
          kind: 'bad-signature',
          event: i,
          body,
          headers: headers(body, undefined, `whsec_${Buffer.from('not the secret, but 32 bytes ok').toString('base64')}`),
        });
      if (i % 3 === 1) deliveries.push({ kind: 'malformed', event: i, body: body.slice(0, -7), headers: headers(body.slice(0, -7)) });
      if (i % 5 === 2) deliveries.push({ kind: 'unrecognised', event: i, body: '{"event_id":"x"}', headers: headers('{"event_id":"x"}') });
    }
    // In this order, 48 clients each taking the next delivery: duplicates race their originals.
    const order = deliveries;
    const answers = new Map<string, number[]>();
    const perEvent = new Map<number, number[]>();
    let retried = 0;
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 48 }, async () => {
        while (next < order.length) {
          const d = order[next++]!;
          for (;;) {
            const response = await fetch(url, { method: 'POST', headers: d.headers, body: d.body });
            const answer = (await response.json()) as { error?: string };
            expect(typeof answer).toBe('object');
            if (response.status === 503) {
              retried += 1; // a sender honours Retry-After; a tenth of it keeps the test short
              await pause(100 * Number(response.headers.get('retry-after') ?? 1));
              continue;
            }
            answers.set(d.kind, [...(answers.get(d.kind) ?? []), response.status]);
            if (['valid', 'same-id', 'new-id'].includes(d.kind)) perEvent.set(d.event, [...(perEvent.get(d.event) ?? []), response.status]);
            break;
          }
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    const statuses = (kind: Delivery['kind']) => [...new Set(answers.get(kind))].sort();
    expect({ badSignature: statuses('bad-signature'), malformed: statuses('malformed'), unrecognised: statuses('unrecognised') }).toEqual({
      badSignature: [401],
      malformed: [400],
      unrecognised: [422],
    });
    // Of each event's deliveries (the original, the same one again, one under a new id), whichever
    // came first is accepted (202) and the others are redeliveries (200), however they raced.
    const wrong = [...perEvent].filter(([, s]) => s.filter((x) => x === 202).length !== 1 || s.some((x) => x !== 202 && x !== 200));
    expect(wrong.map(([i, s]) => `event ${i}: ${s.join(',')}`)).toEqual([]);
    expect(perEvent.size).toBe(unique);
    // On Kafka: each event exactly once.
    const events = (await pipeline.bus.read(TOPICS.providerEvents))
      .map((m) => parseEnvelope(m.value))
      .flatMap((r) => (r.ok && r.value.type === 'provider.event' ? [r.value.data.event_id] : []));
    const ours = events.filter((id) => id.startsWith(`${run}-`));
    expect(ours.length).toBe(unique);
    expect(new Set(ours).size).toBe(unique);
    // At the receiver: one maintenance notification per host, none twice.
    const told = () =>
      pipeline.vendors
        .of('webhook')
        .flatMap((r) => (r.body.notification.alerts as { host: string }[]).map((a) => a.host))
        .filter((h) => h.startsWith(`${run}-host-`));
    await waitFor(() => new Set(told()).size === unique, `a maintenance notification for each of ${unique} hosts (have ${new Set(told()).size})`, 90_000);
    await pause(2_000);
    expect(told().length).toBe(unique);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    console.log(
      `[faults] intake flood: ${deliveries.length} deliveries from 48 clients in ${seconds.toFixed(1)} s (${Math.round(deliveries.length / seconds)}/s), ${retried} answered 503 and retried; ${unique} events once on Kafka, ${told().length} notifications at the receiver`,
    );
  });
});
