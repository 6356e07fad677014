import { request, type Server } from 'node:http';
import { MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { RoutesFile } from '@gpualert/notify';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { slowClient } from '../../../test/infra/slow-client.ts';
import { waitFor } from '@gpualert/test-support';
import { createNotifierServer, MAX_BODY_BYTES, NotifierConfigError, NotifierMetrics } from './notifier-http.ts';
import { startNotifier } from './notifier-service.ts';
import { loadSilences } from './silences.ts';

const TOKEN = 'notifier-token-0123456789';
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(limits = {}) {
  const store = new MemoryStore();
  const metrics = new NotifierMetrics();
  const server = createNotifierServer(store, metrics, TOKEN, undefined, limits);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { store, metrics, base: `http://127.0.0.1:${port}`, port };
}

const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const post = (base: string, body: unknown) => fetch(`${base}/v1/silences`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
const silence = { matchers: ['host="h1"'], duration_seconds: 600, created_by: 'bo', comment: 'rack move' };

describe('the notifier HTTP server', () => {
  it('refuses a token shorter than 16 characters, naming the variable', () => {
    expect(() => createNotifierServer(new MemoryStore(), new NotifierMetrics(), 'x')).toThrow(NotifierConfigError);
    expect(() => createNotifierServer(new MemoryStore(), new NotifierMetrics(), 'short-token')).toThrow(
      'GPUALERT_NOTIFIER_TOKEN must be at least 16 characters (got 11)',
    );
    for (const token of ['abcdefghijklmnopqrst ', ' '.repeat(16), 'abcdefgh\nijklmnopqrst']) {
      expect(() => createNotifierServer(new MemoryStore(), new NotifierMetrics(), token), JSON.stringify(token)).toThrow(
        'GPUALERT_NOTIFIER_TOKEN must not start or end with white space',
      );
    }
  });

  it('answers silences it cannot take with 400 JSON and stores nothing', async () => {
    const { base, store } = await serve();
    const refused = [
      { ...silence, matchers: ['host=~"(.*){20}!"', 'x=~"(a)\\1"'] },
      { ...silence, matchers: ['host=~".*"'] },
      { ...silence, matchers: ['nosuchlabel=""'] },
      { ...silence, matchers: ['severity!="nope"'] },
      { ...silence, created_by: '' },
      { ...silence, duration_seconds: 1e308 },
      { ...silence, duration_seconds: 1e13 },
      { ...silence, duration_seconds: '600' },
    ];
    for (const body of refused) {
      const answer = await post(base, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(((await answer.json()) as { error: string }).error).toBe('invalid_silence');
    }
    expect(Object.keys(await loadSilences(store))).toEqual([]);
    const created = await post(base, { ...silence, matchers: ['host=~"(.*){20}!"'] });
    expect(created.status).toBe(201);
    const stored = (await created.json()) as { endsAt: number };
    expect(Number.isFinite(stored.endsAt)).toBe(true);
  });

  it('answers an oversized body with 413 before reading it', async () => {
    const { port } = await serve();
    // Declares 200 MB and sends none of it: the answer comes anyway, and the connection closes.
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/v1/silences', method: 'POST', headers: { ...auth, 'content-length': String(200 * 1024 * 1024) } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write('{');
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'body_too_large' });
    // Chunked, no declared length: cut off once past the limit.
    const chunked = await fetch(`http://127.0.0.1:${port}/v1/silences`, {
      method: 'POST',
      headers: auth,
      duplex: 'half',
      body: new ReadableStream({
        pull(c) {
          c.enqueue(new Uint8Array(MAX_BODY_BYTES / 4).fill(32));
        },
      }),
    } as RequestInit).catch(() => undefined);
    if (chunked) expect(chunked.status).toBe(413);
  });

  it('cuts off a client that never finishes its headers', async () => {
    const { port } = await serve({ headersTimeoutMs: 500, requestTimeoutMs: 1_000 });
    // The same client of a server with long limits is still connected then: the limits did it.
    const patient = await serve({ headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 });
    const halfRequest = 'GET /healthz HTTP/1.1\r\nHost: x\r\n';
    const cut = slowClient(port, halfRequest);
    const kept = slowClient(patient.port, halfRequest);
    try {
      await waitFor(() => cut.closed(), 'the server to cut off the client', 30_000);
      expect(cut.reply()).toMatch(/^HTTP\/1\.1 408/);
      expect(kept.closed()).toBe(false);
    } finally {
      cut.destroy();
      kept.destroy();
    }
  });

  it('labels /metrics by route template: random paths add no series', async () => {
    const { base, metrics } = await serve();
    for (let i = 0; i < 50; i += 1) await fetch(`${base}/v1/silences/${Math.random().toString(36).slice(2)}`, { method: 'DELETE' });
    for (let i = 0; i < 50; i += 1) await fetch(`${base}/v1/events/${Math.random().toString(36).slice(2)}`);
    const series = (await metrics.registry.getSingleMetric('gpualert_notifier_http_requests_total')!.get()).values;
    expect(series.map((v) => `${v.labels.route} ${v.labels.method} ${v.labels.status}`).sort()).toEqual(['/v1/silences/{id} DELETE 401', 'other GET 404']);
  });
});

describe("the notifier's probes", () => {
  it('/healthz says the process answers; /readyz and /-/ready say whether it can work, with the reason when the store stops answering', async () => {
    /** The embedded store, its reads failing while `away` (Redis gone). */
    class FlakyStore extends MemoryStore {
      away = false;
      override async get(key: string): Promise<string | null> {
        if (this.away) throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
        return super.get(key);
      }
    }
    const store = new FlakyStore();
    const bus = new MemoryBus();
    const routes = RoutesFile.parse({ receivers: [{ name: 'r', channel: 'record' }], route: { receiver: 'r' } });
    const notifier = await startNotifier({ bus, store, log: createLogger({ name: 't', level: 'silent' }), routes, env: {} });
    const server = createNotifierServer(store, new NotifierMetrics(), TOKEN, bus, {}, routes, notifier);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const ready = await fetch(`${base}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([200, { status: 'ready', checks: { bus: 'ok', 'alerts consumer': 'ok', store: 'ok' } }]);
      expect((await fetch(`${base}/-/ready`)).status).toBe(200);
      store.away = true;
      const notReady = await fetch(`${base}/readyz`);
      expect([notReady.status, await notReady.json()]).toEqual([
        503,
        { status: 'not ready', checks: { bus: 'ok', 'alerts consumer': 'ok', store: 'connect ECONNREFUSED 127.0.0.1:6379' } },
      ]);
      const am = await fetch(`${base}/-/ready`);
      expect([am.status, await am.text()]).toEqual([503, expect.stringContaining('ECONNREFUSED')]);
      // Alive all the while: liveness is the process answering, not its dependencies.
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/-/healthy`)).status).toBe(200);
    } finally {
      store.away = false;
      await notifier.stop();
      await bus.close();
    }
  });
});
