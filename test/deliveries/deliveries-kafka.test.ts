import type { Server } from 'node:http';
import type { Bus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { createIntakeServer } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { parseEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { RedisStore } from '@gpualert/state/redis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { close, listen } from '../infra/http.ts';
import { uniqueName } from '../infra/wait-for.ts';
import { fixture, LoopbackProvider } from './loopback-provider.ts';

const TOKEN = 'a-shared-intake-token-of-32-chars';
const TOPIC = 'arn:aws:sns:us-west-2:123456789012:MyTopic';
const AUDIENCE = 'https://intake.example.com/v1/deliveries/pubsub';
const PUSHER = 'pubsub-push@my-project.iam.gserviceaccount.com';
const json = (name: string) => JSON.parse(fixture(name)) as Record<string, unknown>;

/**
 * Every protocol end to end on the real Kafka and Redis: the handshake happens, then a real
 * event arrives, is verified, and becomes one `provider.event` on Kafka; its redelivery adds none.
 */
describe('provider delivery protocols over real HTTP, Kafka and Redis', () => {
  let provider: LoopbackProvider;
  let bus: Bus;
  let store: StateStore;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    provider = await LoopbackProvider.start();
    bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${uniqueName('deliveries')}.`, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    store = new RedisStore({ url: inject('redisUrl'), prefix: `${uniqueName('deliveries')}:` });
    ({ server } = createIntakeServer({
      bus,
      store,
      log: createLogger({ name: 'test', level: 'silent' }),
      now: Date.now,
      seenTtlMs: 86_400_000,
      publishTimeoutMs: 10_000,
      maxBodyBytes: 256 * 1024,
      auth: { secrets: [], token: TOKEN, tokenHeader: 'x-gpualert-token' },
      deliveries: {
        snsTopicArns: [TOPIC],
        pubsub: { audience: AUDIENCE, serviceAccounts: [PUSHER] },
        fetchAllowance: { origins: [provider.origin] },
        googleJwksUrl: `${provider.origin}/oauth2/v3/certs`,
      },
    }));
    url = await listen(server);
  });
  afterAll(async () => {
    await close(server);
    await provider.stop();
    await bus.close();
    await store.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const eventsFor = async (host: string): Promise<Envelope[]> =>
    (await bus.read(TOPICS.providerEvents))
      .map((m) => parseEnvelope(m.value))
      .flatMap((p) => (p.ok && p.value.type === 'provider.event' && p.value.host === host ? [p.value] : []));
  /** Sends a delivery twice: 202 then 200 duplicate, and exactly one provider.event for the host. */
  async function once(host: string, send: () => Promise<Response>): Promise<Envelope> {
    expect((await send()).status).toBe(202);
    const again = await send();
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: 'duplicate' });
    const events = await eventsFor(host);
    expect(events).toHaveLength(1);
    return events[0]!;
  }

  it('SNS: confirms the subscription, then one signed notification becomes one provider.event', async () => {
    const sns = (m: Record<string, unknown>) => post('/v1/deliveries/sns', m, { 'content-type': 'text/plain; charset=UTF-8' });
    const confirm = await sns(provider.signSns({ ...json('deliveries/sns-subscription-confirmation.json'), Timestamp: new Date().toISOString() }, '2'));
    expect(confirm.status).toBe(200);
    expect(provider.count('/confirm')).toBe(1);
    const event = JSON.stringify({
      ...JSON.parse(fixture('aws-eventbridge-spot-interruption-warning.json')),
      id: crypto.randomUUID(),
      detail: { 'instance-id': 'i-0aaaa1111bbbb2222', 'instance-action': 'terminate' },
    });
    const message = provider.signSns(
      { ...json('deliveries/sns-notification.json'), MessageId: crypto.randomUUID(), Message: event, Timestamp: new Date().toISOString() },
      '2',
    );
    const published = await once('i-0aaaa1111bbbb2222', () => sns(message));
    expect(published.data).toMatchObject({ provider: 'aws', kind: 'preemption' });
  });

  it('Event Grid: validates, then a Resource Health event becomes one provider.event', async () => {
    const validation = await post(`/v1/deliveries/eventgrid?token=${TOKEN}`, fixture('deliveries/eventgrid-subscription-validation.json'));
    expect(await validation.json()).toEqual({ validationResponse: '512d38b6-c7b8-40c8-89fe-f46f9e9622b6' });
    const alert = json('deliveries/azure-monitor-resource-health.json');
    (alert.data as { essentials: Record<string, unknown> }).essentials.configurationItems = ['eg-vm-01'];
    const body = [
      {
        id: crypto.randomUUID(),
        topic: '/subscriptions/x',
        subject: 's',
        eventType: 'Microsoft.Insights.Alert',
        eventTime: new Date().toISOString(),
        data: alert,
        dataVersion: '1',
        metadataVersion: '1',
      },
    ];
    await once('eg-vm-01', () => post(`/v1/deliveries/eventgrid?token=${TOKEN}`, body));
  });

  it('Pub/Sub: a verified push of a system event becomes one provider.event', async () => {
    const entry = fixture('deliveries/gcp-logging-migrate-on-host-maintenance.json').replace('gpu-node-17', 'ps-node-01');
    const envelope = {
      message: { data: Buffer.from(entry).toString('base64'), messageId: String(Date.now()), publishTime: new Date().toISOString(), attributes: {} },
      subscription: 'projects/p/subscriptions/s',
    };
    const now = Math.floor(Date.now() / 1000);
    const token = provider.jwt({ iss: 'https://accounts.google.com', aud: AUDIENCE, email: PUSHER, email_verified: true, iat: now, exp: now + 3600 });
    await once('ps-node-01', () => post('/v1/deliveries/pubsub', envelope, { authorization: `Bearer ${token}` }));
  });

  it('OCI: confirms the subscription, then a maintenance event becomes one provider.event', async () => {
    const basic = `Basic ${Buffer.from(`gpualert:${TOKEN}`).toString('base64')}`;
    const to = `${provider.origin}/confirm?oci=1`;
    expect(
      (
        await post(
          '/v1/deliveries/oci',
          { ConfirmationURL: to },
          { 'x-oci-ns-messagetype': 'SubscriptionConfirmation', 'x-oci-ns-confirmationurl': to, authorization: basic },
        )
      ).status,
    ).toBe(200);
    const event = JSON.parse(fixture('oci-instance-maintenance-scheduled.json')) as { data: { resourceId: string; additionalDetails: { instanceId: string } } };
    event.data.additionalDetails.instanceId = 'ocid1.instance.oc1.phx.kafkae2e';
    event.data.resourceId = `ocid1.instancemaintenanceevent.${crypto.randomUUID()}`;
    const headers = { 'x-oci-ns-messagetype': 'Notification', 'x-oci-ns-messageid': crypto.randomUUID(), authorization: basic };
    await once('ocid1.instance.oc1.phx.kafkae2e', () => post('/v1/deliveries/oci', event, headers));
  });

  it('Azure Monitor: a Resource Health alert becomes one provider.event', async () => {
    const alert = json('deliveries/azure-monitor-resource-health.json');
    const essentials = (alert.data as { essentials: Record<string, unknown> }).essentials;
    essentials.configurationItems = ['am-vm-01'];
    essentials.alertId = `/subscriptions/x/providers/Microsoft.AlertsManagement/alerts/${crypto.randomUUID()}`;
    await once('am-vm-01', () => post(`/v1/deliveries/azure-monitor?token=${TOKEN}`, alert));
  });

  it('CloudEvents: the handshake, then a structured event becomes one provider.event', async () => {
    const handshake = await fetch(`${url}/v1/deliveries/cloudevents`, { method: 'OPTIONS', headers: { 'webhook-request-origin': 'eventgrid.azure.net' } });
    expect(handshake.headers.get('webhook-allowed-origin')).toBe('eventgrid.azure.net');
    const spot = {
      ...JSON.parse(fixture('aws-eventbridge-spot-interruption-warning.json')),
      id: crypto.randomUUID(),
      detail: { 'instance-id': 'i-0cccc3333dddd4444' },
    };
    const event = { specversion: '1.0', id: crypto.randomUUID(), source: 'aws.ec2', type: 'EC2 Spot Instance Interruption Warning', data: spot };
    await once('i-0cccc3333dddd4444', () =>
      post('/v1/deliveries/cloudevents', event, { 'content-type': 'application/cloudevents+json', 'x-gpualert-token': TOKEN }),
    );
  });
});
