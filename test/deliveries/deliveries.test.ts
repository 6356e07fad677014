import type { Server } from 'node:http';
import { MemoryBus } from '@gpualert/bus';
import { createIntakeServer, KEY_SERVER_RETRY_AFTER_S } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { parseEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { close, listen } from '../infra/http.ts';
import { fixture, LoopbackProvider } from './loopback-provider.ts';

const TOKEN = 'a-shared-intake-token-of-32-chars';
const TOPIC = 'arn:aws:sns:us-west-2:123456789012:MyTopic';
const AUDIENCE = 'https://intake.example.com/v1/deliveries/pubsub';
const PUSHER = 'pubsub-push@my-project.iam.gserviceaccount.com';
const log = createLogger({ name: 'test', level: 'silent' });
const json = (name: string) => JSON.parse(fixture(name)) as Record<string, unknown>;

let provider: LoopbackProvider;
let bus: MemoryBus;
let server: Server;
let url: string;

beforeAll(async () => {
  provider = await LoopbackProvider.start();
});
afterAll(async () => provider.stop());

beforeEach(async () => {
  if (server) await close(server);
  bus = new MemoryBus({ partitions: 2 });
  provider.failing = false;
  provider.requests.length = 0;
  ({ server } = createIntakeServer({
    bus,
    store: new MemoryStore(),
    log,
    now: Date.now,
    seenTtlMs: 48 * 3_600_000,
    publishTimeoutMs: 5_000,
    maxBodyBytes: 256 * 1024,
    auth: { secrets: [], token: TOKEN, tokenHeader: 'x-gpualert-token' },
    deliveries: {
      snsTopicArns: [TOPIC],
      pubsub: { audience: AUDIENCE, serviceAccounts: [PUSHER] },
      // The loopback provider stands in for SNS's and Google's hosts: a test-only allowance.
      fetchAllowance: { origins: [provider.origin] },
      googleJwksUrl: `${provider.origin}/oauth2/v3/certs`,
    },
  }));
  url = await listen(server);
});

async function published(): Promise<Envelope[]> {
  return (await bus.read(TOPICS.providerEvents)).map((m) => {
    const parsed = parseEnvelope(m.value);
    if (!parsed.ok) throw new Error(parsed.error.message);
    return parsed.value;
  });
}
const events = async () => (await published()).filter((e) => e.type === 'provider.event');

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('SNS over HTTPS (/v1/deliveries/sns)', () => {
  const now = () => new Date().toISOString();
  const confirmation = () => ({ ...json('deliveries/sns-subscription-confirmation.json'), Timestamp: now() });
  const notification = (message = fixture('aws-eventbridge-spot-interruption-warning.json')) => ({
    ...json('deliveries/sns-notification.json'),
    MessageId: crypto.randomUUID(),
    Message: message,
    Timestamp: now(),
  });
  const sns = (message: Record<string, unknown>) =>
    post('/v1/deliveries/sns', message, { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': String(message.Type) });

  it('confirms a subscription by fetching its SubscribeURL, once its signature verifies', async () => {
    const answer = await sns(provider.signSns(confirmation()));
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ status: 'subscribed', topic: TOPIC });
    expect(provider.count('/confirm?Action=ConfirmSubscription')).toBe(1);
    expect(await published()).toHaveLength(0);
  });

  it("publishes a signed notification's EventBridge event once (SignatureVersion 1 and 2), and answers a replay 200 duplicate", async () => {
    // AWS's two samples share one EventBridge id; a real rebalance notice has its own.
    const rebalance = JSON.stringify({ ...JSON.parse(fixture('aws-eventbridge-rebalance-recommendation.json')), id: crypto.randomUUID() });
    const inner = { '1': fixture('aws-eventbridge-spot-interruption-warning.json'), '2': rebalance };
    for (const version of ['1', '2'] as const) {
      const message = provider.signSns(notification(inner[version]), version);
      const first = await sns(message);
      expect(first.status).toBe(202);
      const again = await sns(message);
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({ status: 'duplicate' });
    }
    // The same spot warning again under a new SNS MessageId is a redelivery of its event.
    const resent = await sns(provider.signSns(notification(), '2'));
    expect(await resent.json()).toMatchObject({ status: 'duplicate' });
    const all = await events();
    expect(all.map((e) => e.type === 'provider.event' && [e.data.provider, e.data.kind])).toEqual([
      ['aws', 'preemption'],
      ['aws', 'rebalance'],
    ]);
    expect(provider.count('/SimpleNotificationService-loopback.pem')).toBe(1); // the certificate is cached
  });

  it('refuses a message altered after signing with 401 and publishes nothing', async () => {
    const signed = provider.signSns(notification());
    const answer = await sns({ ...signed, Message: fixture('aws-eventbridge-rebalance-recommendation.json') });
    expect(answer.status).toBe(401);
    expect(String(((await answer.json()) as { message: string }).message)).toMatch(/Signature/);
    expect(await published()).toHaveLength(0);
  });

  it("never fetches a certificate or SubscribeURL off SNS's hosts", async () => {
    const offHost = { ...provider.signSns(notification()), SigningCertURL: 'https://evil.example.com/SimpleNotificationService-x.pem' };
    expect((await sns(offHost)).status).toBe(401);
    const lookalike = { ...provider.signSns(notification()), SigningCertURL: 'https://sns.us-east-1.amazonaws.com.evil.example/x.pem' };
    expect((await sns(lookalike)).status).toBe(401);
    const elsewhere = provider.signSns({ ...confirmation(), SubscribeURL: 'https://metadata.google.internal/computeMetadata/v1/' });
    const answer = await sns({ ...elsewhere, SubscribeURL: 'https://metadata.google.internal/computeMetadata/v1/' });
    expect(answer.status).toBe(401);
    expect(provider.requests.filter((r) => !r.endsWith('.pem'))).toEqual([]);
  });

  it('refuses a certificate that is not issued to sns.amazonaws.com, and a topic that is not ours', async () => {
    expect((await sns(provider.signSns(notification(), '1', 'SimpleNotificationService-notsns.pem'))).status).toBe(401);
    const other = await sns(provider.signSns({ ...notification(), TopicArn: 'arn:aws:sns:us-west-2:999999999999:Theirs' }));
    expect(other.status).toBe(403);
    expect(await published()).toHaveLength(0);
  });

  it('refuses a signed message older than the intake remembers deliveries (the published sample, dated 2012)', async () => {
    const answer = await sns(provider.signSns({ ...notification(), Timestamp: '2012-05-02T00:54:06.655Z' }));
    expect(answer.status).toBe(401);
  });

  it('answers 503 with Retry-After while the certificate server is away, never 202 unverified', async () => {
    provider.failing = true;
    const message = provider.signSns(notification());
    const answer = await sns(message);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe(String(KEY_SERVER_RETRY_AFTER_S));
    expect(await published()).toHaveLength(0);
    provider.failing = false;
    expect((await sns(message)).status).toBe(202);
  });
});

describe('Event Grid (/v1/deliveries/eventgrid)', () => {
  const eventGridEvent = (data: unknown, id = crypto.randomUUID()) => [
    {
      id,
      topic: '/subscriptions/11111111-1111-1111-1111-111111111111',
      subject: 'alert',
      eventType: 'Microsoft.Insights.Alert',
      eventTime: new Date().toISOString(),
      data,
      dataVersion: '1',
      metadataVersion: '1',
    },
  ];

  it('answers the published SubscriptionValidationEvent with its code, with our token in the URL', async () => {
    const answer = await post(`/v1/deliveries/eventgrid?token=${TOKEN}`, fixture('deliveries/eventgrid-subscription-validation.json'), {
      'aeg-event-type': 'SubscriptionValidation',
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ validationResponse: '512d38b6-c7b8-40c8-89fe-f46f9e9622b6' });
    const without = await post('/v1/deliveries/eventgrid', fixture('deliveries/eventgrid-subscription-validation.json'));
    expect(without.status).toBe(401);
  });

  it('publishes a Resource Health alert in an event once, a redelivery is 200 duplicate, a wrong token 401', async () => {
    const body = eventGridEvent(json('deliveries/azure-monitor-resource-health.json'));
    expect((await post('/v1/deliveries/eventgrid', body, { 'x-gpualert-token': TOKEN })).status).toBe(202);
    const again = await post('/v1/deliveries/eventgrid', body, { 'x-gpualert-token': TOKEN });
    expect(again.status).toBe(200);
    expect((await post('/v1/deliveries/eventgrid', body, { 'x-gpualert-token': 'not-the-token-at-all-no-no-no' })).status).toBe(401);
    const all = await events();
    expect(all.map((e) => [e.host, e.type === 'provider.event' && e.data.kind, e.type === 'provider.event' && e.data.status])).toEqual([
      ['test-VM', 'stop', 'started'],
    ]);
  });

  it('answers the CloudEvents OPTIONS handshake Event Grid uses with the CloudEvents schema', async () => {
    const answer = await fetch(`${url}/v1/deliveries/eventgrid`, { method: 'OPTIONS', headers: { 'webhook-request-origin': 'eventgrid.azure.net' } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('webhook-allowed-origin')).toBe('eventgrid.azure.net');
  });
});

describe('Pub/Sub push (/v1/deliveries/pubsub)', () => {
  const entry = fixture('deliveries/gcp-logging-migrate-on-host-maintenance.json');
  const envelope = (data = entry, messageId = String(Date.now()) + String(Math.random()).slice(2, 8)) => ({
    ...json('deliveries/pubsub-push-envelope.json'),
    message: {
      ...(json('deliveries/pubsub-push-envelope.json').message as object),
      data: Buffer.from(data).toString('base64'),
      messageId,
      message_id: messageId,
    },
  });
  const claims = (over: Record<string, unknown> = {}) => ({
    iss: 'https://accounts.google.com',
    aud: AUDIENCE,
    email: PUSHER,
    email_verified: true,
    sub: '1234567890',
    iat: Math.floor(Date.now() / 1000),
    exp: Math.floor(Date.now() / 1000) + 3600,
    ...over,
  });
  const push = (body: unknown, token: string) => post('/v1/deliveries/pubsub', body, { authorization: `Bearer ${token}` });

  it('publishes a Compute Engine system event from a verified push once; a redelivery is 200 duplicate', async () => {
    const body = envelope();
    const first = await push(body, provider.jwt(claims()));
    expect(first.status).toBe(202);
    expect((await push(body, provider.jwt(claims()))).status).toBe(200);
    const all = await events();
    expect(all.map((e) => [e.host, e.type === 'provider.event' && e.data.kind])).toEqual([['gpu-node-17', 'migration']]);
    expect(provider.count('/oauth2/v3/certs')).toBe(1);
  });

  it('refuses a token of another audience, issuer or key, an expired one, or none with 401; another service account 403', async () => {
    const other = (await import('node:crypto')).generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const refusals = [
      [provider.jwt(claims({ aud: 'https://someone-else.example.com/' })), 401],
      [provider.jwt(claims({ iss: 'https://evil.example.com' })), 401],
      [provider.jwt(claims(), { key: other }), 401],
      [provider.jwt(claims({ exp: Math.floor(Date.now() / 1000) - 3600 })), 401],
      [provider.jwt(claims({ email: 'attacker@their-project.iam.gserviceaccount.com' })), 403],
      ['not-a-jwt', 401],
    ] as const;
    for (const [token, status] of refusals) expect((await push(envelope(), token)).status).toBe(status);
    expect((await post('/v1/deliveries/pubsub', envelope())).status).toBe(401);
    expect(await published()).toHaveLength(0);
  });

  it("answers 503 with Retry-After while Google's keys cannot be fetched", async () => {
    provider.failing = true;
    const answer = await push(envelope(), provider.jwt(claims()));
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe(String(KEY_SERVER_RETRY_AFTER_S));
  });

  it('reads the published push envelope, whose data is not an event: 422 naming message.data', async () => {
    const answer = await push(json('deliveries/pubsub-push-envelope.json'), provider.jwt(claims()));
    expect(answer.status).toBe(422);
    expect(String(((await answer.json()) as { message: string }).message)).toMatch(/message\.data/);
  });
});

describe('OCI Notifications (/v1/deliveries/oci)', () => {
  const basic = `Basic ${Buffer.from(`gpualert:${TOKEN}`).toString('base64')}`;
  const sample = json('deliveries/oci-subscription-confirmation.json') as { headers: Record<string, string>; body: Record<string, string> };
  const confirmation = (to: string) =>
    post('/v1/deliveries/oci', { ConfirmationURL: to }, { ...sample.headers, 'X-OCI-NS-ConfirmationURL': to, authorization: basic });

  it('confirms a subscription by fetching its ConfirmationURL on an allowed host, and no other', async () => {
    const answer = await confirmation(`${provider.origin}/confirm?token=abc&protocol=CUSTOM_HTTPS`);
    expect(answer.status).toBe(200);
    expect(provider.count('/confirm')).toBe(1);
    expect((await confirmation('https://169.254.169.254/opc/v2/instance/')).status).toBe(400);
    expect((await confirmation('https://notification.us-ashburn-1.oci.oraclecloud.com.evil.example/x')).status).toBe(400);
    expect(provider.count('/confirm')).toBe(1);
  });

  it('publishes an instance maintenance event once under its message id; a wrong password is 401', async () => {
    const body = fixture('oci-instance-maintenance-scheduled.json');
    const headers = { 'x-oci-ns-messagetype': 'Notification', 'x-oci-ns-messageid': crypto.randomUUID(), authorization: basic };
    expect((await post('/v1/deliveries/oci', body, headers)).status).toBe(202);
    expect((await post('/v1/deliveries/oci', body, headers)).status).toBe(200);
    const wrong = `Basic ${Buffer.from('gpualert:guess-guess-guess-guess').toString('base64')}`;
    expect((await post('/v1/deliveries/oci', body, { ...headers, authorization: wrong })).status).toBe(401);
    expect(await events()).toHaveLength(1);
  });
});

describe('Azure Monitor action groups (/v1/deliveries/azure-monitor)', () => {
  it('publishes the published Resource Health alert once, on the VM it names; a resend is 200 duplicate', async () => {
    const body = fixture('deliveries/azure-monitor-resource-health.json');
    expect((await post(`/v1/deliveries/azure-monitor?token=${TOKEN}`, body)).status).toBe(202);
    expect((await post(`/v1/deliveries/azure-monitor?token=${TOKEN}`, body)).status).toBe(200);
    expect((await post('/v1/deliveries/azure-monitor', body)).status).toBe(401);
    const all = await events();
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ host: 'test-VM', data: { provider: 'azure', kind: 'stop', status: 'started' } });
  });

  it('takes the published Service Health alert (completed) and refuses a metric alert by name', async () => {
    expect((await post(`/v1/deliveries/azure-monitor?token=${TOKEN}`, fixture('deliveries/azure-monitor-service-health.json'))).status).toBe(202);
    expect((await events())[0]).toMatchObject({ data: { kind: 'maintenance', status: 'completed', event_id: 'servicehealth:ABC1-DEF' } });
    const metric = { ...json('deliveries/azure-monitor-resource-health.json') };
    (metric.data as { essentials: Record<string, unknown> }).essentials = {
      ...(metric.data as { essentials: object }).essentials,
      monitoringService: 'Platform',
    };
    (metric.data as { alertContext: Record<string, unknown> }).alertContext = { conditionType: 'SingleResourceMultipleMetricCriteria' };
    const answer = await post(`/v1/deliveries/azure-monitor?token=${TOKEN}`, metric);
    expect(answer.status).toBe(422);
    expect(await answer.json()).toMatchObject({ field: 'data.essentials.monitoringService' });
  });
});

describe('CloudEvents (/v1/deliveries/cloudevents)', () => {
  const spot = JSON.parse(fixture('aws-eventbridge-spot-interruption-warning.json')) as unknown;

  it('answers the abuse-protection handshake', async () => {
    const answer = await fetch(`${url}/v1/deliveries/cloudevents`, { method: 'OPTIONS', headers: { 'webhook-request-origin': 'eventemitter.example.com' } });
    expect(answer.headers.get('webhook-allowed-origin')).toBe('eventemitter.example.com');
    expect((await fetch(`${url}/v1/deliveries/cloudevents`, { method: 'OPTIONS' })).status).toBe(400);
  });

  it('publishes a structured-mode event once, a binary-mode resend of it is 200 duplicate, no token is 401', async () => {
    const id = crypto.randomUUID();
    const structured = {
      specversion: '1.0',
      id,
      source: 'aws.ec2',
      type: 'EC2 Spot Instance Interruption Warning',
      datacontenttype: 'application/json',
      data: spot,
    };
    const first = await post('/v1/deliveries/cloudevents', structured, { 'content-type': 'application/cloudevents+json', 'x-gpualert-token': TOKEN });
    expect(first.status).toBe(202);
    const binary = await post('/v1/deliveries/cloudevents', spot, {
      'ce-specversion': '1.0',
      'ce-id': id,
      'ce-source': 'aws.ec2',
      'ce-type': 'x',
      'x-gpualert-token': TOKEN,
    });
    expect(binary.status).toBe(200);
    expect((await post('/v1/deliveries/cloudevents', structured, { 'content-type': 'application/cloudevents+json' })).status).toBe(401);
    expect(await events()).toHaveLength(1);
  });
});

it('names the protocols on an unknown one', async () => {
  const answer = await post('/v1/deliveries/smoke-signals', {});
  expect(answer.status).toBe(404);
  expect(String(((await answer.json()) as { message: string }).message)).toMatch(/sns, eventgrid, pubsub, oci, azure-monitor, cloudevents/);
});
