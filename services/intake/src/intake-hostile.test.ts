import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import type { Server } from 'node:http';
import { MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { MAX_HOSTS_PER_PROVIDER_EVENT, parseEnvelope, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { slowClient } from '../../../test/infra/slow-client.ts';
import { waitFor } from '@gpualert/test-support';
import { handleDelivery, MAX_HOSTS_PER_DELIVERY, type IntakeDeps } from './handle-delivery.ts';
import { intakeConfigFrom } from './intake-config.ts';
import { createIntakeServer } from './intake-server.ts';
import { MAX_JSON_DEPTH } from './json-depth.ts';
import { sign } from './standard-webhooks.ts';

const SECRET = `whsec_${Buffer.from('a test secret of 32 bytes length').toString('base64')}`;
const log = createLogger({ name: 'test', level: 'silent' });

function deps(bus = new MemoryBus({ partitions: 2 })): IntakeDeps & { bus: MemoryBus } {
  return {
    bus,
    store: new MemoryStore(),
    now: Date.now,
    seenTtlMs: 60_000,
    publishTimeoutMs: 5_000,
    auth: { secrets: [SECRET], tokenHeader: 'authorization' },
  };
}

function signed(body: string) {
  const id = `msg_${randomUUID()}`;
  const at = Math.floor(Date.now() / 1000);
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(at), 'webhook-signature': sign(SECRET, id, at, body) };
}

const deliver = (d: IntakeDeps, body: string, provider = 'generic') => handleDelivery({ provider, headers: signed(body), body: Buffer.from(body) }, d);

const event = (hosts: string[], id: string = randomUUID()) =>
  JSON.stringify({ event_id: id, kind: 'maintenance', status: 'scheduled', hosts, window_start: '2026-12-01T00:00:00Z', duration_seconds: 600 });

describe('the intake at its bounds', () => {
  it("takes an event naming the most hosts allowed in linear time: each host's envelope names only its host", async () => {
    const d = deps();
    const hosts = Array.from({ length: MAX_HOSTS_PER_PROVIDER_EVENT }, (_, i) => `gpu-node-${String(i).padStart(5, '0')}`);
    const answer = await deliver(d, event(hosts));
    expect(answer.status).toBe(202);
    const published = (await d.bus.read(TOPICS.providerEvents)).filter((m) => m.value.includes('"provider.event"'));
    expect(published).toHaveLength(hosts.length);
    // Before: every envelope carried the whole list, 1,000 × 20 KB here (16,000 hosts: 23.5 s, 4.5 GB).
    expect(Math.max(...published.map((m) => m.value.length))).toBeLessThan(1_000);
    const first = parseEnvelope(published[0]!.value);
    expect(first.ok && first.value.type === 'provider.event' && first.value.data.hosts).toEqual([first.ok && first.value.host]);
  });

  it('answers an event naming 16,000 hosts 422 with a JSON body naming the bound, quickly, and publishes nothing', async () => {
    const d = deps();
    const hosts = Array.from({ length: 16_000 }, (_, i) => `i-${i.toString(16).padStart(17, '0')}`);
    const answer = await deliver(d, event(hosts));
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({ error: 'too_many_hosts', field: 'hosts', limit: MAX_HOSTS_PER_PROVIDER_EVENT });
    expect(await d.bus.read(TOPICS.providerEvents)).toEqual([]);
  });

  it('answers one delivery of many events that name more hosts together than one event may 422, and publishes nothing', async () => {
    const d = deps();
    // 30 events of 400 hosts each: 12,000 alerts downstream froze an embedded `up` for 111 s
    const events = Array.from({ length: 30 }, (_, e) => ({
      event_id: `many-${e}`,
      kind: 'reboot',
      status: 'started',
      window_start: '2026-12-01T00:00:00Z',
      hosts: Array.from({ length: 400 }, (_, h) => `gpu-${e}-${h}`),
    }));
    const answer = await deliver(d, JSON.stringify({ events }));
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({ error: 'too_many_hosts', field: 'hosts', limit: MAX_HOSTS_PER_DELIVERY });
    expect(await d.bus.read(TOPICS.providerEvents)).toEqual([]);
    const fits = await deliver(d, JSON.stringify({ events: events.slice(0, 2) }));
    expect(fits.status).toBe(202);
  });

  it('answers a host the engine would refuse (300 characters) 422 naming the field, not 202', async () => {
    const d = deps();
    const answer = await deliver(d, event(['h'.repeat(300)], 'same-id'));
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({ error: 'invalid_event' });
    expect(String(answer.body.field)).toMatch(/host/);
    expect(await d.bus.read(TOPICS.providerEvents)).toEqual([]);
    // Nothing was claimed: the corrected delivery of the same event is taken.
    expect((await deliver(d, event(['h-ok'], 'same-id'))).status).toBe(202);
  });

  it('answers a 100,000-deep body 400 (a permanent problem), not 503 with Retry-After', async () => {
    const d = deps();
    const deep = `{"event_id":"x","hosts":["h"],"kind":"maintenance","status":"scheduled","description":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const answer = await deliver(d, deep);
    expect(answer.status).toBe(400);
    expect(answer.headers?.['retry-after']).toBeUndefined();
    expect(answer.body).toMatchObject({ error: 'too_deep', limit: MAX_JSON_DEPTH });
    // Brackets inside strings are text, not nesting.
    expect((await deliver(d, event([`${'['.repeat(100)}h`]))).status).not.toBe(400);
  });

  it('refuses secrets and tokens under 16 characters or bytes, and a body limit past its bound', () => {
    const short = `whsec_${Buffer.from('fifteen bytes!!').toString('base64')}`;
    expect(() => intakeConfigFrom({ GPUALERT_INTAKE_SECRETS: short }, {})).toThrow(
      /invalid config: GPUALERT_INTAKE_SECRETS \(environment\): expected a secret of at least 16 bytes/,
    );
    expect(() => intakeConfigFrom({ GPUALERT_INTAKE_TOKEN: 'x'.repeat(15) }, {})).toThrow(
      /invalid config: GPUALERT_INTAKE_TOKEN \(environment\): expected a token of at least 16 characters/,
    );
    expect(() => intakeConfigFrom({ GPUALERT_INTAKE_MAX_BODY_BYTES: String(1e12) }, {})).toThrow(
      /invalid config: GPUALERT_INTAKE_MAX_BODY_BYTES \(environment\): /,
    );
    expect(intakeConfigFrom({ GPUALERT_INTAKE_SECRETS: SECRET, GPUALERT_INTAKE_TOKEN: 'x'.repeat(16) }, {}).secrets).toEqual([SECRET]);
  });
});

describe('the intake server against hostile clients', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
  async function start(options: { headersTimeoutMs?: number; requestTimeoutMs?: number } = {}) {
    const { server } = createIntakeServer({ ...deps(), log, maxBodyBytes: 64 * 1024, ...options });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (typeof address !== 'object' || !address) throw new Error('no address');
    return { port: address.port, url: `http://127.0.0.1:${address.port}` };
  }

  it('labels /metrics by route template: 2,000 requests to random paths add no series', async () => {
    const { url } = await start();
    const series = async () => (await (await fetch(`${url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('gpualert_intake_requests_total{')).length;
    await fetch(`${url}/v1/events/generic`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    const before = await series();
    for (let i = 0; i < 2_000; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, () =>
          fetch(`${url}/v1/events/${randomUUID()}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }).then((r) => r.arrayBuffer()),
        ),
      );
    }
    expect(await series()).toBeLessThanOrEqual(before + 1); // at most one `provider="unknown"` series
    expect(await (await fetch(`${url}/metrics`)).text()).toMatch(/gpualert_intake_requests_total\{provider="unknown",outcome="unsupported_media_type"\} 2000/);
  });

  it('refuses a body declared larger than the limit with 413 before reading it', async () => {
    const { port } = await start();
    const answer = await rawRequest(
      port,
      'POST /v1/events/generic HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 209715200\r\n\r\n{"a":',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toMatch(/payload_too_large/);
  });

  it('cuts off a client that dribbles its headers, and one that never finishes its body', async () => {
    // The same clients on a server with long limits are still connected when the short limits have
    // cut them off: the limits do it, whatever the machine's speed.
    const quick = await start({ headersTimeoutMs: 1_000, requestTimeoutMs: 1_500 });
    const patient = await start({ headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 });
    const dribbles = {
      headers: 'POST /v1/events/generic HTTP/1.1\r\nhost: x\r\n', // never sends the blank line that ends them
      body: 'POST /v1/events/generic HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"a":',
    };
    const clients = Object.entries(dribbles).map(([what, text]) => ({ what, quick: slowClient(quick.port, text), patient: slowClient(patient.port, text) }));
    try {
      await waitFor(() => clients.every((c) => c.quick.closed()), 'the short limits to cut off both clients', 30_000);
      for (const c of clients) {
        expect(c.quick.reply(), c.what).toMatch(/^HTTP\/1\.1 408|^$/);
        expect(c.patient.closed(), c.what).toBe(false);
      }
    } finally {
      for (const c of clients) {
        c.quick.destroy();
        c.patient.destroy();
      }
    }
  });
});

/** Writes `text` and waits for the server to answer and close, or for `timeoutMs`; what came back. */
function rawRequest(port: number, text: string, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open past ${timeoutMs} ms; got ${JSON.stringify(received.slice(0, 200))}`));
    }, timeoutMs);
    socket.on('data', (chunk) => {
      received += chunk.toString();
      if (/^HTTP\/1\.1 413/.test(received) && received.includes('}')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', () => {});
  });
}
