import { MemoryBus } from '@gpualert/bus';
import { createIntakeServer, sign } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { parseEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { close, listen } from './infra/http.ts';

const TOKEN = 'a-job-report-token-of-32-chars!!';
const SECRET = `whsec_${Buffer.from('a test secret of 32 bytes length').toString('base64')}`;
const log = createLogger({ name: 'test', level: 'silent' });
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function intake(publishFails = false) {
  const bus = new MemoryBus();
  if (publishFails) bus.publish = () => Promise.reject(new Error('cannot reach kafka://gpualert:hunter2-secret@kafka-1:9092'));
  const { server } = createIntakeServer({
    bus,
    store: new MemoryStore(),
    log,
    now: Date.now,
    seenTtlMs: 60_000,
    publishTimeoutMs: 1_000,
    maxBodyBytes: 8 * 1024,
    auth: { secrets: [SECRET], token: TOKEN, tokenHeader: 'authorization' },
  });
  const url = await listen(server);
  cleanups.push(() => close(server));
  const post = async (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) => {
    const response = await fetch(`${url}/v1/job-events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const published = async () =>
    (await bus.read(TOPICS.jobEvents)).map((m) => {
      const parsed = parseEnvelope(m.value);
      if (!parsed.ok) throw new Error(parsed.error.message);
      return parsed.value as EnvelopeOf<'job.event'>;
    });
  return { url, post, published };
}

describe('POST /v1/job-events on the intake', () => {
  it('takes a step report with the token and publishes one job.event keyed by its host', async () => {
    const { post, published } = await intake();
    const answer = await post({ host: 'gpu-node-07', job: '12345', kind: 'step', rank: 3, step: 41200, step_time_ms: 812.5 });
    expect(answer).toMatchObject({ status: 202, body: { status: 'accepted', events: 1 } });
    const [event] = await published();
    expect(event).toMatchObject({
      type: 'job.event',
      host: 'gpu-node-07',
      data: { job: '12345', kind: 'step', rank: 3, step: 41200, step_time_ms: 812.5, message: '' },
    });
  });

  it('takes a batch signed with Standard Webhooks; a checkpoint says ok or failed', async () => {
    const { post, published } = await intake();
    const body = JSON.stringify({
      events: [
        { host: 'gpu-node-07', job: 'j', kind: 'checkpoint', checkpoint: 'ok', step: 41000 },
        { host: 'gpu-node-08', job: 'j', kind: 'checkpoint', checkpoint: 'failed', step: 41000, message: 'No space left on device' },
      ],
    });
    const at = Math.floor(Date.now() / 1000);
    const answer = await post(body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(at), 'webhook-signature': sign(SECRET, 'msg_1', at, body) });
    expect(answer.status).toBe(202);
    expect((await published()).map((e) => [e.host, e.data.checkpoint])).toEqual([
      ['gpu-node-07', 'ok'],
      ['gpu-node-08', 'failed'],
    ]);
  });

  it('refuses a wrong token (401), bad JSON (400), and a bad event naming its field (422); nothing is published', async () => {
    const { post, published } = await intake();
    expect((await post({ host: 'h', job: 'j', kind: 'step' }, { authorization: 'Bearer not-the-token-at-all-no' })).status).toBe(401);
    expect((await post('{"host":')).body).toMatchObject({ error: 'malformed_json' });
    expect((await post({ host: 'h', job: 'j', kind: 'checkpoint' })).body).toMatchObject({ error: 'invalid_event', field: 'checkpoint' });
    expect(
      (
        await post({
          events: [
            { host: 'h', job: 'j', kind: 'step' },
            { host: 'h', job: 'j', kind: 'reboot' },
          ],
        })
      ).body,
    ).toMatchObject({ error: 'invalid_event', field: 'events.1.kind' });
    expect((await post({ job: 'j', kind: 'step' })).body).toMatchObject({ error: 'invalid_event', field: 'host' });
    expect((await post({ host: 'h', job: 'j', kind: 'step', ts: '2020-01-01T00:00:00Z' })).body).toMatchObject({ error: 'invalid_event', field: 'ts' });
    expect((await post({ host: 'h', job: 'j', kind: 'step', fields: JSON.parse('{"__proto__": 1}') })).body).toMatchObject({
      error: 'invalid_event',
      field: 'fields.__proto__',
    });
    expect((await post({ events: Array.from({ length: 101 }, () => ({ host: 'h', job: 'j', kind: 'step' })) })).body).toMatchObject({
      error: 'too_many_events',
      limit: 100,
    });
    expect(await published()).toEqual([]);
    // the same route does publish when the event is good: the checks above were what refused
    expect((await post({ host: 'h', job: 'j', kind: 'step' })).status).toBe(202);
    expect(await published()).toHaveLength(1);
  });

  it('answers 413 past the body bound, 405 to a GET, and 503 without the broker credentials when the bus is away', async () => {
    const { url, post } = await intake();
    expect((await post({ host: 'h', job: 'j', kind: 'step', message: 'x'.repeat(9000) })).status).toBe(413);
    expect((await fetch(`${url}/v1/job-events`)).status).toBe(405);
    const away = await intake(true);
    const answer = await away.post({ host: 'h', job: 'j', kind: 'step' });
    expect(answer.status).toBe(503);
    expect(String(answer.body.message)).toContain('could not be made durable');
    expect(String(answer.body.message)).not.toContain('hunter2-secret');
  });
});
