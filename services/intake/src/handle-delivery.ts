import { createHash } from 'node:crypto';
import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import { ADAPTERS } from '@gpualert/providers';
import { newEnvelope, Provider, stableId, TOPICS, type ProviderEventData } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { tokenMatches, verifyStandardWebhook } from './standard-webhooks.ts';

export interface IntakeAuth {
  /** Standard Webhooks secrets (`whsec_…`), several during rotation. */
  readonly secrets: readonly string[];
  /** A shared token for senders that cannot sign (EventBridge API destinations). */
  readonly token?: string;
  /** The header that carries the token. */
  readonly tokenHeader: string;
}

export interface IntakeDeps {
  readonly bus: Bus;
  readonly store: StateStore;
  readonly auth: IntakeAuth;
  readonly now: () => number;
  /** How long a seen delivery is remembered: longer than any sender retries (EventBridge: 24 h). */
  readonly seenTtlMs: number;
  /** A publish slower than this answers 503 so the sender retries. */
  readonly publishTimeoutMs: number;
}

export interface DeliveryRequest {
  readonly provider: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

export interface IntakeResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers?: Record<string, string>;
  /** For metrics and logs. */
  readonly outcome: string;
  readonly events?: number;
}

const SOURCE = 'intake/0.1.0';

function answer(status: number, outcome: string, body: Record<string, unknown>, headers?: Record<string, string>): IntakeResponse {
  return headers ? { status, outcome, body, headers } : { status, outcome, body };
}

/** Where an instance id maps to a gpualert host (written from `host.inventory`). */
export function instanceHostKey(instanceId: string): string {
  return `intake:instance-host:${instanceId}`;
}

/**
 * One delivery, checked in the order a sender can act on: who it is (401), what it is (400, 422),
 * whether we have it already (200), and only then durable publishing (202, or 503 to retry).
 */
export async function handleDelivery(request: DeliveryRequest, deps: IntakeDeps): Promise<IntakeResponse> {
  const provider = Provider.safeParse(request.provider);
  if (!provider.success) {
    return answer(404, 'unknown_provider', { error: 'unknown_provider', message: `no adapter for "${request.provider}"; expected one of ${Provider.options.join(', ')}` });
  }
  const auth = authenticate(request, deps);
  if (auth) return answer(401, 'unauthorized', { error: 'unauthorized', message: auth });

  let payload: unknown;
  try {
    payload = JSON.parse(request.body.toString('utf8'));
  } catch (error) {
    return answer(400, 'malformed', { error: 'malformed_json', message: `the body is not JSON: ${(error as Error).message}` });
  }
  const receivedAt = new Date(deps.now()).toISOString();
  const adapted = ADAPTERS[provider.data](payload, { receivedAt });
  if (!adapted.ok) {
    return answer(422, 'unrecognised', {
      error: 'unrecognised_payload', field: adapted.error.path, message: `${adapted.error.path === '' ? 'payload' : adapted.error.path}: ${adapted.error.message}`,
    });
  }

  const deliveryId = header(request.headers, 'webhook-id') ?? createHash('sha256').update(request.body).digest('hex');
  const deliveryKey = `intake:delivery:${provider.data}:${deliveryId}`;
  if ((await deps.store.get(deliveryKey)) === 'done') return answer(200, 'duplicate', { status: 'duplicate', delivery: deliveryId });
  if (!(await deps.store.compareAndSet(deliveryKey, null, 'pending', { ttlMs: deps.publishTimeoutMs * 3 }))) {
    // The same delivery is being handled right now (a sender retrying fast): let it retry.
    return answer(503, 'in_progress', { error: 'in_progress', message: 'this delivery is being processed; retry' }, { 'retry-after': '1' });
  }
  let claimed: ProviderEventData[] = [];
  try {
    const ttl = { ttlMs: deps.seenTtlMs };
    const claim = await claimEvents(adapted.events, provider.data, deliveryId, deps);
    claimed = claim.claimed;
    if (claim.contended) {
      // Another delivery carrying one of these events is being published right now: after it,
      // this one is a redelivery (or the rest of it is new); the sender's retry will tell.
      await releaseClaims(claimed, provider.data, deliveryId, deps.store);
      await deps.store.compareAndSet(deliveryKey, 'pending', null).catch(() => false);
      return answer(503, 'in_progress', { error: 'in_progress', message: 'an event of this delivery is being processed under another delivery; retry' }, { 'retry-after': '1' });
    }
    if (claimed.length === 0 && adapted.events.length > 0) {
      // Every event in it was accepted before under another delivery id: a redelivery.
      await deps.store.set(deliveryKey, 'done', ttl);
      return answer(200, 'duplicate', { status: 'duplicate', delivery: deliveryId, events: 0 });
    }
    const events = await withHosts(claimed, deps.store);
    await publishDurably(deps, provider.data, payload, deliveryId, events, receivedAt);
    await Promise.all(claimed.map((e) => deps.store.set(eventKey(provider.data, e), 'done', ttl)));
    await deps.store.set(deliveryKey, 'done', ttl);
    return { ...answer(202, 'accepted', { status: 'accepted', delivery: deliveryId, events: events.length }), events: events.length };
  } catch (error) {
    await releaseClaims(claimed, provider.data, deliveryId, deps.store).catch(() => {});
    await deps.store.compareAndSet(deliveryKey, 'pending', null).catch(() => false);
    return answer(503, 'unavailable', { error: 'unavailable', message: `events could not be made durable: ${error instanceof Error ? error.message : String(error)}` }, { 'retry-after': '5' });
  }
}

function authenticate(request: DeliveryRequest, deps: IntakeDeps): string | undefined {
  const { secrets, token, tokenHeader } = deps.auth;
  if (secrets.length === 0 && !token) return 'the intake has no secret or token configured, and accepts nothing unauthenticated';
  if (token && header(request.headers, tokenHeader.toLowerCase()) !== undefined) {
    return tokenMatches(header(request.headers, tokenHeader.toLowerCase()), token) ? undefined : `the ${tokenHeader} token does not match`;
  }
  if (secrets.length === 0) return `missing the ${tokenHeader} token`;
  const verified = verifyStandardWebhook(request.headers, request.body, secrets, Math.floor(deps.now() / 1000));
  return verified.ok ? undefined : `signature: ${verified.reason}`;
}

function eventKey(provider: string, event: ProviderEventData): string {
  return `intake:event:${provider}:${event.event_id}:${event.status}`;
}

/**
 * Claims the events whose (id, status) was not accepted before, under any delivery id, so two
 * deliveries of one event racing each other publish it once: `contended` when another delivery
 * holds a claim on one of them right now.
 */
async function claimEvents(
  events: readonly ProviderEventData[], provider: string, deliveryId: string, deps: IntakeDeps,
): Promise<{ claimed: ProviderEventData[]; contended: boolean }> {
  // 'claimed', 'seen' (accepted before) or 'contended', per event, all at once.
  const outcomes = await Promise.all(events.map(async (event) => {
    const key = eventKey(provider, event);
    if (await deps.store.compareAndSet(key, null, `pending:${deliveryId}`, { ttlMs: deps.publishTimeoutMs * 3 })) return 'claimed';
    return (await deps.store.get(key)) === 'done' ? 'seen' : 'contended';
  }));
  return { claimed: events.filter((_, i) => outcomes[i] === 'claimed'), contended: outcomes.includes('contended') };
}

async function releaseClaims(events: readonly ProviderEventData[], provider: string, deliveryId: string, store: StateStore): Promise<void> {
  await Promise.all(events.map((e) => store.compareAndSet(eventKey(provider, e), `pending:${deliveryId}`, null)));
}

/** Instance ids become gpualert hosts through the inventory; unknown ones stay as they are. */
async function withHosts(events: readonly ProviderEventData[], store: StateStore): Promise<ProviderEventData[]> {
  return Promise.all(
    events.map(async (e) => ({ ...e, hosts: await Promise.all(e.hosts.map(async (h) => (await store.get(instanceHostKey(h))) ?? h)) })),
  );
}

async function publishDurably(
  deps: IntakeDeps, provider: Provider, payload: unknown, deliveryId: string, events: readonly ProviderEventData[], receivedAt: string,
): Promise<void> {
  const rawHost = events[0]?.hosts[0] ?? 'intake';
  const raw = newEnvelope({
    type: 'provider.raw', id: stableId('provider.raw', provider, deliveryId), host: rawHost, source: SOURCE, ts: receivedAt,
    data: { provider, payload },
  });
  // One envelope per affected host, keyed by it, so each host's state sees its own notice in order.
  const messages = events.flatMap((data) =>
    (data.hosts.length > 0 ? data.hosts : ['unknown']).map((host) =>
      envelopeMessage(newEnvelope({
        type: 'provider.event', id: stableId('provider.event', provider, data.event_id, data.status, host), host, source: SOURCE, ts: receivedAt, data,
      })),
    ),
  );
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Kafka did not acknowledge within ${deps.publishTimeoutMs} ms`)), deps.publishTimeoutMs);
  });
  try {
    // The raw payload first, then what it meant, on the same topic and in that order.
    const published = deps.bus
      .publish(TOPICS.providerEvents, [envelopeMessage(raw)])
      .then(() => (messages.length > 0 ? deps.bus.publish(TOPICS.providerEvents, messages) : undefined));
    published.catch(() => {}); // a late failure after the deadline was already answered with 503
    await Promise.race([published, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function header(headers: DeliveryRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
