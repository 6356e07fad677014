import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { Bus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { sign, createIntakeServer } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { parseEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { RedisStore } from '@gpualert/state/redis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { close, listen } from './infra/http.ts';
import { KafkaBroker } from './infra/kafka-broker.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const SECRET = `whsec_${Buffer.from('a test secret of 32 bytes length').toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.from('the secret before the rotation!!').toString('base64')}`;
const fixture = (name: string) => readFileSync(new URL(`./fixtures/provider/${name}`, import.meta.url), 'utf8');
const log = createLogger({ name: 'test', level: 'silent' });

function signed(body: string, secret = SECRET, options: { id?: string; at?: number } = {}) {
  const id = options.id ?? `msg_${randomUUID()}`;
  const timestamp = options.at ?? Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(secret, id, timestamp, body),
  };
}

async function startIntake(bus: Bus, store: StateStore) {
  const { server } = createIntakeServer({
    bus,
    store,
    log,
    now: Date.now,
    seenTtlMs: 86_400_000,
    publishTimeoutMs: 2_000,
    maxBodyBytes: 64 * 1024,
    auth: { secrets: [SECRET, OLD_SECRET], token: 'eventbridge-token', tokenHeader: 'x-gpualert-token' },
  });
  return { server, url: await listen(server) };
}

async function envelopesOn(bus: Bus): Promise<Envelope[]> {
  return (await bus.read(TOPICS.providerEvents)).map((m) => {
    const parsed = parseEnvelope(m.value);
    if (!parsed.ok) throw new Error(parsed.error.message);
    return parsed.value;
  });
}

describe('intake over real HTTP, Kafka and Redis', () => {
  let bus: Bus;
  let store: StateStore;
  let url: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${uniqueName('intake')}.`, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    store = new RedisStore({ url: inject('redisUrl'), prefix: `${uniqueName('intake')}:` });
    const started = await startIntake(bus, store);
    url = started.url;
    stop = async () => {
      await close(started.server);
      await bus.close();
      await store.close();
    };
  });
  afterAll(async () => stop());

  it('accepts a signed delivery once: 202, then 200 for the same delivery, one event on the topic', async () => {
    const body = fixture('azure-scheduled-events-freeze-scheduled.json');
    const headers = signed(body);
    const first = await fetch(`${url}/v1/events/azure`, { method: 'POST', headers, body });
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ status: 'accepted', events: 1 }); // one event naming two VMs
    const again = await fetch(`${url}/v1/events/azure`, { method: 'POST', headers, body });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: 'duplicate' });
    // A different delivery id carrying the same event and status is a redelivery too.
    const resent = await fetch(`${url}/v1/events/azure`, { method: 'POST', headers: signed(body), body });
    expect(resent.status).toBe(200);
    const all = await envelopesOn(bus);
    const events = all.filter((e) => e.type === 'provider.event');
    expect(events.map((e) => e.host).sort()).toEqual(['WestNO_0', 'WestNO_1']);
    expect(all.filter((e) => e.type === 'provider.raw')).toHaveLength(1);
    // the same event moving on to "started" is news
    const started = fixture('azure-scheduled-events-freeze-started.json');
    expect((await fetch(`${url}/v1/events/azure`, { method: 'POST', headers: signed(started), body: started })).status).toBe(202);
  });

  it('takes an AWS Health event naming no host, and says in its answer why it pages nobody', async () => {
    const payload = JSON.parse(fixture('aws-health-issue-entities-not-instance-ids.json')) as {
      id: string;
      resources: unknown[];
      detail: Record<string, unknown>;
    };
    payload.id = `${payload.id}-nobody`;
    payload.resources = [];
    payload.detail.eventArn = `${String(payload.detail.eventArn)}-nobody`;
    payload.detail.affectedEntities = [{ entityValue: 'AWS_ACCOUNT' }];
    const body = JSON.stringify(payload);
    const response = await fetch(`${url}/v1/events/aws`, { method: 'POST', headers: signed(body), body });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ status: 'accepted', warnings: [expect.stringMatching(/names no host: .* pages nobody$/)] });
    // the same as AWS documents it names its entities, and is answered without a warning
    const named = fixture('aws-health-issue-entities-not-instance-ids.json');
    const ok = await fetch(`${url}/v1/events/aws`, { method: 'POST', headers: signed(named), body: named });
    expect(ok.status).toBe(202);
    expect(await ok.json()).not.toHaveProperty('warnings');
  });

  it('accepts a secret from before the rotation and the header token of unsigned senders', async () => {
    const body = JSON.stringify({ event_id: 'rot-1', kind: 'reboot', status: 'scheduled', hosts: ['h9'], window_start: '2026-12-01T00:00:00Z' });
    expect((await fetch(`${url}/v1/events/generic`, { method: 'POST', headers: signed(body, OLD_SECRET), body })).status).toBe(202);
    const aws = fixture('aws-health-scheduled-change-nth.json');
    const byToken = await fetch(`${url}/v1/events/aws`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gpualert-token': 'eventbridge-token' },
      body: aws,
    });
    expect(byToken.status).toBe(202);
  });

  it('refuses tampered, wrongly signed and stale deliveries with 401 and publishes nothing', async () => {
    const before = (await envelopesOn(bus)).length;
    const body = JSON.stringify({ event_id: 'x-1', kind: 'reboot', status: 'scheduled', hosts: ['h1'] });
    const cases = [
      { headers: signed(body), body: body.replace('h1', 'h2') },
      { headers: signed(body, `whsec_${Buffer.from('somebody else entirely, 32 bytes').toString('base64')}`), body },
      // Outside the 300 s tolerance: +301 read a second later is 300 and passed (the exact edge is
      // standard-webhooks.test.ts's, at a fixed clock), so the future case stands 305 s ahead.
      { headers: signed(body, SECRET, { at: Math.floor(Date.now() / 1000) - 301 }), body },
      { headers: signed(body, SECRET, { at: Math.floor(Date.now() / 1000) + 305 }), body },
      { headers: { 'content-type': 'application/json' }, body },
      { headers: { 'content-type': 'application/json', 'x-gpualert-token': 'wrong' }, body },
    ];
    for (const { headers, body: sent } of cases) {
      const response = await fetch(`${url}/v1/events/generic`, { method: 'POST', headers, body: sent });
      expect(response.status).toBe(401);
      expect((await response.json()) as { error: string }).toMatchObject({ error: 'unauthorized' });
    }
    expect((await envelopesOn(bus)).length).toBe(before);
  });

  it('answers garbage 400, a wrong type 415, an oversized body 413, an unknown shape 422 naming the field', async () => {
    const garbage = '{"not json';
    const bad = await fetch(`${url}/v1/events/generic`, { method: 'POST', headers: signed(garbage), body: garbage });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'malformed_json' });
    const text = await fetch(`${url}/v1/events/generic`, { method: 'POST', headers: { ...signed('x'), 'content-type': 'text/plain' }, body: 'x' });
    expect(text.status).toBe(415);
    const big = JSON.stringify({ padding: 'x'.repeat(70 * 1024) });
    const large = await fetch(`${url}/v1/events/generic`, { method: 'POST', headers: signed(big), body: big });
    expect(large.status).toBe(413);
    const odd = JSON.stringify({ event_id: 'x', kind: 'explode', status: 'scheduled', hosts: ['h'] });
    const unknown = await fetch(`${url}/v1/events/generic`, { method: 'POST', headers: signed(odd), body: odd });
    expect(unknown.status).toBe(422);
    expect(await unknown.json()).toMatchObject({ error: 'unrecognised_payload', field: 'kind' });
    const provider = await fetch(`${url}/v1/events/ibm`, { method: 'POST', headers: signed(odd), body: odd });
    expect(provider.status).toBe(404);
  });

  it('serves /healthz, /readyz (the real Kafka and Redis answering) and /metrics with requests by outcome', async () => {
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${url}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready', checks: { bus: 'ok', store: 'ok' } }]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/gpualert_intake_requests_total\{provider="azure",outcome="accepted"\} 2/);
    expect(metrics).toMatch(/gpualert_intake_requests_total\{provider="generic",outcome="unauthorized"\} 6/);
    expect(metrics).toMatch(/gpualert_intake_request_duration_seconds_bucket/);
    expect(Number(/^gpualert_intake_process_resident_memory_bytes (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(10 * 1024 * 1024);
  });

  it('accepts an event sent under two delivery ids at the same moment once: one 202, one event on the topic', async () => {
    const ids = Array.from({ length: 10 }, () => randomUUID());
    const statuses = await Promise.all(
      ids.flatMap((id) => {
        const body = JSON.stringify({
          event_id: `race-${id}`,
          kind: 'reboot',
          status: 'scheduled',
          hosts: ['race-host'],
          window_start: '2026-12-01T02:00:00Z',
          duration_seconds: 60,
        });
        // Two senders, each retrying a 503 as Retry-After says (sooner here).
        return [0, 1].map(async () => {
          const headers = signed(body);
          for (;;) {
            const response = await fetch(`${url}/v1/events/generic`, { method: 'POST', headers, body });
            if (response.status !== 503) return `${id} ${response.status}`;
            await new Promise((r) => setTimeout(r, 50));
          }
        });
      }),
    );
    for (const id of ids)
      expect(
        statuses
          .filter((s) => s.startsWith(id))
          .map((s) => s.split(' ')[1])
          .sort(),
      ).toEqual(['200', '202']);
    const events = (await envelopesOn(bus)).filter((e) => e.type === 'provider.event' && e.data.event_id.startsWith('race-'));
    expect(events).toHaveLength(10);
  });
});

describe('intake while Kafka is away', () => {
  it("answers 503 with Retry-After, and the sender's retry after Kafka is back lands once", async () => {
    const broker = await KafkaBroker.create();
    const bus = new KafkaBus({ brokers: [broker.brokers], topicPrefix: 'outage.', partitions: 1, publishTimeoutMs: 2_000 });
    const store = new RedisStore({ url: inject('redisUrl'), prefix: `${uniqueName('outage')}:` });
    try {
      await bus.ensureTopics(Object.values(TOPICS));
      const { server, url } = await startIntake(bus, store);
      try {
        const body = fixture('oci-instance-maintenance-scheduled.json');
        const headers = signed(body);
        await broker.stop();
        const refused = await fetch(`${url}/v1/events/oci`, { method: 'POST', headers, body });
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('5');
        await broker.start();
        let retry: Response | undefined;
        await waitFor(
          async () => {
            retry = await fetch(`${url}/v1/events/oci`, { method: 'POST', headers, body });
            return retry.status === 202;
          },
          'the retry to be accepted',
          60_000,
        );
        const events = (await bus.read(TOPICS.providerEvents)).map((m) => parseEnvelope(m.value)).filter((r) => r.ok && r.value.type === 'provider.event');
        expect(events).toHaveLength(1);
      } finally {
        await close(server);
      }
    } finally {
      await bus.close();
      await store.close();
      await broker.destroy();
    }
  }, 120_000);
});
