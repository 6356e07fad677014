import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryBus } from '@gpualert/bus';
import { createIntakeServer } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { parseEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close, listen } from './infra/http.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'pager');
const PD_SECRET = 'pd-signing-secret-0123456789abcdef';
const TOKEN = 'intake-token-0123456789abcdef0123';

/** PagerDuty's own sample, turned into the acknowledgement of a page gpualert sent (the only fields changed). */
function pagerDutyAck(): string {
  const sample = JSON.parse(readFileSync(join(FIXTURES, 'pagerduty-v3-incident.json'), 'utf8')) as {
    event: { event_type: string; data: { incident_key: string; status: string } };
  };
  sample.event.event_type = 'incident.acknowledged';
  sample.event.data.status = 'acknowledged';
  sample.event.data.incident_key = '315b8ee7fb0b80c1';
  return JSON.stringify(sample);
}
const hmac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

describe('acknowledgements from the pager, through the intake', () => {
  const bus = new MemoryBus();
  let base = '';
  let server: ReturnType<typeof createIntakeServer>['server'];
  /** An intake on this bus taking the intake's TOKEN, and what `more` sets. */
  const intake = (more: { pagerdutySecrets?: string[]; opsgenieTokens?: string[] }) =>
    createIntakeServer({
      bus,
      store: new MemoryStore(),
      log: createLogger({ name: 'test', level: 'silent' }),
      now: Date.now,
      seenTtlMs: 3_600_000,
      publishTimeoutMs: 5_000,
      maxBodyBytes: 256 * 1024,
      auth: { secrets: [], token: TOKEN, tokenHeader: 'authorization' },
      ...more,
    }).server;
  beforeAll(async () => {
    server = intake({ pagerdutySecrets: ['old-secret-that-is-rotating-out', PD_SECRET] });
    base = await listen(server);
  });
  afterAll(async () => {
    await close(server);
    await bus.close();
  });
  const acks = async () =>
    (await bus.read(TOPICS.notifications)).flatMap((m) => {
      const r = parseEnvelope(m.value);
      return r.ok && r.value.type === 'acknowledgement' ? [r.value as EnvelopeOf<'acknowledgement'>] : [];
    });
  const post = (pager: string, body: string, headers: Record<string, string>) =>
    fetch(`${base}/v1/pager/${pager}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  it('PagerDuty: a correctly signed v3 webhook (one of two signatures during a rotation) becomes an acknowledgement by its agent', async () => {
    const body = pagerDutyAck();
    const response = await post('pagerduty', body, {
      'x-pagerduty-signature': `v1=${hmac('another-accounts-secret-xxxxxxxx', body)},v1=${hmac(PD_SECRET, body)}`,
    });
    expect(response.status).toBe(202);
    const [ack] = await acks();
    expect(ack?.host).toBe('pagerduty');
    expect(ack?.data).toEqual({
      pager: 'pagerduty',
      action: 'acknowledged',
      fingerprint: '315b8ee7fb0b80c1',
      by: 'Tenex Engineer',
      pager_incident: 'PGR0VU2',
      pager_event: '5ac64822-4adc-4fda-ade0-410becf0de4f',
      title: 'A little bump in the road',
      url: 'https://acme.pagerduty.com/incidents/PGR0VU2',
    });
    // 2020 is outside the event-time window: dated by its receipt, not refused
    expect(Date.parse(ack?.ts ?? '')).toBeGreaterThan(Date.now() - 60_000);
  });

  it('PagerDuty: a wrong signature, a body changed after signing, no signature, or the intake token are all refused with 401, and nothing is published', async () => {
    const before = (await acks()).length;
    const body = pagerDutyAck();
    const cases: [string, Record<string, string>][] = [
      [body, { 'x-pagerduty-signature': `v1=${hmac('not-the-secret-0123456789abcdef', body)}` }],
      [body.replace('Tenex Engineer', 'Mallory'), { 'x-pagerduty-signature': `v1=${hmac(PD_SECRET, body)}` }],
      [body, {}],
      [body, { 'x-pagerduty-signature': hmac(PD_SECRET, body) }], // no v1= prefix
      [body, { authorization: `Bearer ${TOKEN}` }],
    ];
    for (const [sent, headers] of cases) {
      const response = await post('pagerduty', sent, headers);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { message: string }).message).toMatch(/X-PagerDuty-Signature|signature/);
    }
    expect(await acks()).toHaveLength(before);
  });

  it("PagerDuty: the docs' own sample (a priority change) is answered 2xx and not recorded", async () => {
    const body = readFileSync(join(FIXTURES, 'pagerduty-v3-incident.json'), 'utf8');
    const before = (await acks()).length;
    const response = await post('pagerduty', body, { 'x-pagerduty-signature': `v1=${hmac(PD_SECRET, body)}` });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { status: string }).status).toBe('ignored');
    expect(await acks()).toHaveLength(before);
  });

  it("Opsgenie: the docs' Acknowledge with the intake's token (Opsgenie does not sign; a custom header carries it) becomes an acknowledgement; a wrong token is 401", async () => {
    const body = readFileSync(join(FIXTURES, 'opsgenie-acknowledge.json'), 'utf8');
    expect((await post('opsgenie', body, { authorization: 'Bearer not-the-token-0123456789abcdef' })).status).toBe(401);
    expect((await post('opsgenie', body, {})).status).toBe(401);
    const response = await post('opsgenie', body, { authorization: `Bearer ${TOKEN}` });
    expect(response.status).toBe(202);
    const ack = (await acks()).find((a) => a.data.pager === 'opsgenie');
    expect(ack?.data).toMatchObject({
      action: 'acknowledged',
      fingerprint: 'aliastest',
      by: 'fili@ifountain.com',
      pager_incident: '052652ac-5d1c-464a-812a-7dd18bbfba8c',
    });
    // a redelivery has the same id: the timeline tells it once
    await post('opsgenie', body, { authorization: `Bearer ${TOKEN}` });
    expect(new Set((await acks()).filter((a) => a.data.pager === 'opsgenie').map((a) => a.id)).size).toBe(1);
  });

  it("Opsgenie with tokens of its own: one of them (either, during a rotation) is taken; the intake's own token is refused there, and still opens every other route", async () => {
    const own = ['opsgenie-token-old-0123456789abcdef', 'opsgenie-token-new-0123456789abcdef'];
    // The intake's own token among them would open every route to the integration: refused at start.
    expect(() => intake({ opsgenieTokens: [own[0]!, TOKEN] })).toThrow("GPUALERT_INTAKE_OPSGENIE_TOKENS holds the intake's own token");
    const dedicated = intake({ opsgenieTokens: own });
    const at = await listen(dedicated);
    try {
      const body = readFileSync(join(FIXTURES, 'opsgenie-acknowledge.json'), 'utf8');
      const send = (headers: Record<string, string>) =>
        fetch(`${at}/v1/pager/opsgenie`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      const refused = await send({ authorization: `Bearer ${TOKEN}` });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { message: string }).message).toBe("the authorization token is not the Opsgenie integration's");
      expect((await send({})).status).toBe(401);
      expect((await send({ authorization: `Bearer ${own[0]}` })).status).toBe(202);
      expect((await send({ authorization: own[1]! })).status).toBe(202);
      // The Opsgenie token opens nothing else: a provider notice with it is refused, with the intake's token taken.
      const notice = (token: string) =>
        fetch(`${at}/v1/events/generic`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: '{}' });
      expect((await notice(own[1]!)).status).toBe(401);
      expect((await notice(TOKEN)).status).not.toBe(401);
    } finally {
      await close(dedicated);
    }
  });

  it("an unknown pager is 404, a body that is not the pager's is 422 naming the field", async () => {
    expect((await post('victorops', '{}', { authorization: `Bearer ${TOKEN}` })).status).toBe(404);
    const response = await post('opsgenie', '{"action":"Acknowledge"}', { authorization: `Bearer ${TOKEN}` });
    expect(response.status).toBe(422);
    expect(((await response.json()) as { field: string }).field).toBe('alert');
  });
});
