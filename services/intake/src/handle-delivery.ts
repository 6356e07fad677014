import { createHash } from 'node:crypto';
import type { Bus, OutgoingMessage } from '@gpualert/bus';
import { redactSecrets } from '@gpualert/log';
import { ADAPTERS, type AdapterResult } from '@gpualert/providers';
import { MAX_HOSTS_PER_PROVIDER_EVENT, newEnvelope, parseEnvelope, Provider, stableId, TOPICS, type Envelope, type ProviderEventData } from '@gpualert/schema';
import { errorMessage } from './error-message.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.ts';
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

/**
 * Hosts one delivery may name over all its events: the same as one event may (a rack or pod), so
 * 30 events of 400 hosts in one request cannot become 12,000 alerts at once.
 */
export const MAX_HOSTS_PER_DELIVERY = MAX_HOSTS_PER_PROVIDER_EVENT;

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

export function answer(status: number, outcome: string, body: Record<string, unknown>, headers?: Record<string, string>): IntakeResponse {
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
    return answer(404, 'unknown_provider', {
      error: 'unknown_provider',
      message: `no adapter for "${request.provider}"; expected one of ${Provider.options.join(', ')}`,
    });
  }
  const auth = authenticate(request, deps);
  if (auth) return answer(401, 'unauthorized', { error: 'unauthorized', message: auth });

  if (jsonDepthExceeds(request.body, MAX_JSON_DEPTH)) {
    return answer(400, 'malformed', {
      error: 'too_deep',
      limit: MAX_JSON_DEPTH,
      message: `the body nests deeper than ${MAX_JSON_DEPTH} levels; no provider payload does`,
    });
  }
  let payload: unknown;
  try {
    payload = JSON.parse(request.body.toString('utf8'));
  } catch (error) {
    return answer(400, 'malformed', { error: 'malformed_json', message: `the body is not JSON: ${errorMessage(error)}` });
  }
  const deliveryId = header(request.headers, 'webhook-id') ?? createHash('sha256').update(request.body).digest('hex');
  return acceptPayloads({ provider: provider.data, payloads: [payload], deliveryId }, deps);
}

/** What a delivery protocol hands on once it has verified and unwrapped a delivery. */
export interface VerifiedDelivery {
  readonly provider: Provider;
  /** The provider's own events, one or more (an Event Grid batch), as the adapter reads them. */
  readonly payloads: readonly unknown[];
  /** The sender's own id for this delivery (SNS MessageId, Pub/Sub messageId…): a redelivery under it is a duplicate. */
  readonly deliveryId: string;
  /** The adapter, when not the provider's own (Azure Monitor's common alert schema). */
  readonly adapter?: (payload: unknown, context: { receivedAt: string }) => AdapterResult;
}

/**
 * A verified delivery's payloads: what they mean (422 when unreadable), whether we have them
 * already (200), and only then durable publishing (202, or 503 to retry).
 */
export async function acceptPayloads(delivery: VerifiedDelivery, deps: IntakeDeps): Promise<IntakeResponse> {
  const { provider, deliveryId } = delivery;
  const receivedAt = new Date(deps.now()).toISOString();
  const events: ProviderEventData[] = [];
  const warnings: string[] = [];
  for (let i = 0; i < delivery.payloads.length; i += 1) {
    const one = adapt(provider, delivery.payloads[i], receivedAt, delivery.adapter);
    if (!one.ok) {
      const path = delivery.payloads.length > 1 ? [String(i), one.error.path].filter((p) => p !== '').join('.') : one.error.path;
      return answer(422, 'unrecognised', {
        error: 'unrecognised_payload',
        field: path,
        message: `${path === '' ? 'payload' : path}: ${one.error.message}`,
      });
    }
    events.push(...one.events);
    warnings.push(...(one.warnings ?? []));
  }
  const adapted = { events };
  const payload = delivery.payloads.length === 1 ? delivery.payloads[0] : delivery.payloads;
  const crowded = adapted.events.find((e) => e.hosts.length > MAX_HOSTS_PER_PROVIDER_EVENT);
  const named = adapted.events.reduce((sum, e) => sum + e.hosts.length, 0);
  if (!crowded && named > MAX_HOSTS_PER_DELIVERY) {
    // Many events of many hosts each: every host-event becomes an alert to group and route downstream.
    return answer(422, 'too_many_hosts', {
      error: 'too_many_hosts',
      field: 'hosts',
      limit: MAX_HOSTS_PER_DELIVERY,
      message: `hosts: one delivery may name at most ${MAX_HOSTS_PER_DELIVERY} hosts over all its events, this one names ${named}; send them in several`,
    });
  }
  if (crowded) {
    const count = crowded.hosts.length;
    return answer(422, 'too_many_hosts', {
      error: 'too_many_hosts',
      field: 'hosts',
      limit: MAX_HOSTS_PER_PROVIDER_EVENT,
      message: `hosts: an event may name at most ${MAX_HOSTS_PER_PROVIDER_EVENT} hosts, this one names ${count}; split it`,
    });
  }

  const deliveryKey = `intake:delivery:${provider}:${deliveryId}`;
  let outgoing: Outgoing;
  try {
    if ((await deps.store.get(deliveryKey)) === 'done') return answer(200, 'duplicate', { status: 'duplicate', delivery: deliveryId });
    // Everything that would be published is built and checked as the engine will check it before
    // anything is claimed: a problem with the delivery itself is the sender's to fix (422), not to retry.
    outgoing = outgoingOf(provider, payload, deliveryId, await withHosts(adapted.events, deps.store), receivedAt);
  } catch (error) {
    return unavailable(error);
  }
  if ('invalid' in outgoing) {
    return answer(422, 'invalid_event', { error: 'invalid_event', field: outgoing.invalid.path, message: outgoing.invalid.message });
  }
  let mine: boolean;
  try {
    mine = await deps.store.compareAndSet(deliveryKey, null, 'pending', { ttlMs: deps.publishTimeoutMs * 3 });
  } catch (error) {
    return unavailable(error);
  }
  if (!mine) {
    // The same delivery is being handled right now (a sender retrying fast): let it retry.
    return answer(503, 'in_progress', { error: 'in_progress', message: 'this delivery is being processed; retry' }, { 'retry-after': '1' });
  }
  let claimed: ProviderEventData[] = [];
  try {
    const ttl = { ttlMs: deps.seenTtlMs };
    const claim = await claimEvents(adapted.events, provider, deliveryId, deps);
    claimed = claim.claimed;
    if (claim.contended) {
      // Another delivery carrying one of these events is being published right now: after it,
      // this one is a redelivery (or the rest of it is new); the sender's retry will tell.
      await releaseClaims(claimed, provider, deliveryId, deps.store);
      await deps.store.compareAndSet(deliveryKey, 'pending', null).catch(() => false);
      return answer(
        503,
        'in_progress',
        { error: 'in_progress', message: 'an event of this delivery is being processed under another delivery; retry' },
        { 'retry-after': '1' },
      );
    }
    if (claimed.length === 0 && adapted.events.length > 0) {
      // Every event in it was accepted before under another delivery id: a redelivery.
      await deps.store.set(deliveryKey, 'done', ttl);
      return answer(200, 'duplicate', { status: 'duplicate', delivery: deliveryId, events: 0 });
    }
    const fresh = new Set(claimed);
    const messages = outgoing.perEvent
      .filter((_, i) => {
        const event = adapted.events[i];
        return event !== undefined && fresh.has(event);
      })
      .flat();
    await publishDurably(deps, outgoing.raw, messages);
    await Promise.all(claimed.map((e) => deps.store.set(eventKey(provider, e), 'done', ttl)));
    await deps.store.set(deliveryKey, 'done', ttl);
    // An event that names no host is taken (the timeline keeps it) but the sender hears why it pages nobody.
    const body = { status: 'accepted', delivery: deliveryId, events: claimed.length, ...(warnings.length > 0 ? { warnings } : {}) };
    return { ...answer(202, 'accepted', body), events: claimed.length };
  } catch (error) {
    await releaseClaims(claimed, provider, deliveryId, deps.store).catch(() => {});
    await deps.store.compareAndSet(deliveryKey, 'pending', null).catch(() => false);
    return unavailable(error);
  }
}

/** An adapter that throws has met a payload it cannot read: the same answer as one it refuses. */
function adapt(provider: Provider, payload: unknown, receivedAt: string, adapter: VerifiedDelivery['adapter']): AdapterResult {
  try {
    return (adapter ?? ADAPTERS[provider])(payload, { receivedAt });
  } catch (error) {
    return { ok: false, error: { path: '', message: `could not be read (${error instanceof Error ? error.name : 'error'})` } };
  }
}

/** Kafka or Redis away: the sender should retry, and is told so without any address or credential. */
function unavailable(error: unknown): IntakeResponse {
  const detail = redactSecrets(error instanceof Error ? error.message : String(error));
  return answer(503, 'unavailable', { error: 'unavailable', message: `events could not be made durable: ${detail}` }, { 'retry-after': '5' });
}

/** Who sent a request: undefined when one of the intake's secrets or its token says it is ours, else why not (for the 401). */
export function authenticate(request: DeliveryRequest, deps: IntakeDeps): string | undefined {
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
  events: readonly ProviderEventData[],
  provider: string,
  deliveryId: string,
  deps: IntakeDeps,
): Promise<{ claimed: ProviderEventData[]; contended: boolean }> {
  // 'claimed', 'seen' (accepted before) or 'contended', per event, all at once.
  const outcomes = await Promise.all(
    events.map(async (event) => {
      const key = eventKey(provider, event);
      if (await deps.store.compareAndSet(key, null, `pending:${deliveryId}`, { ttlMs: deps.publishTimeoutMs * 3 })) return 'claimed';
      return (await deps.store.get(key)) === 'done' ? 'seen' : 'contended';
    }),
  );
  return { claimed: events.filter((_, i) => outcomes[i] === 'claimed'), contended: outcomes.includes('contended') };
}

async function releaseClaims(events: readonly ProviderEventData[], provider: string, deliveryId: string, store: StateStore): Promise<void> {
  await Promise.all(events.map((e) => store.compareAndSet(eventKey(provider, e), `pending:${deliveryId}`, null)));
}

/**
 * Instance ids become gpualert hosts through the inventory; unknown ones stay as they are. Each
 * distinct id is looked up once, however many events name it.
 */
async function withHosts(events: readonly ProviderEventData[], store: StateStore): Promise<ProviderEventData[]> {
  const ids = [...new Set(events.flatMap((e) => e.hosts))];
  const mapped = new Map<string, string>();
  await Promise.all(ids.map(async (id) => void mapped.set(id, (await store.get(instanceHostKey(id))) ?? id)));
  return events.map((e) => ({ ...e, hosts: e.hosts.map((h) => mapped.get(h) ?? h) }));
}

/** What a delivery publishes: its raw payload, and per event one envelope per host; or why it may not. */
type Outgoing =
  | { readonly raw: OutgoingMessage; readonly perEvent: readonly (readonly OutgoingMessage[])[] }
  | { readonly invalid: { readonly path: string; readonly message: string } };

/**
 * Builds every envelope the delivery would publish and checks each with `parseEnvelope`, on the
 * very bytes the engine will read. Each per-host envelope names only its own host, so the work
 * and the bytes grow with the number of hosts, not with its square.
 */
function outgoingOf(provider: Provider, payload: unknown, deliveryId: string, events: readonly ProviderEventData[], receivedAt: string): Outgoing {
  const rawHost = events[0]?.hosts[0] ?? 'intake';
  const raw = checked(
    newEnvelope({
      type: 'provider.raw',
      id: stableId('provider.raw', provider, deliveryId),
      host: rawHost,
      source: SOURCE,
      ts: receivedAt,
      data: { provider, payload },
    }),
  );
  if ('invalid' in raw) return raw;
  const perEvent: OutgoingMessage[][] = [];
  for (const data of events) {
    const messages: OutgoingMessage[] = [];
    for (const host of data.hosts.length > 0 ? data.hosts : ['unknown']) {
      const message = checked(
        newEnvelope({
          type: 'provider.event',
          id: stableId('provider.event', provider, data.event_id, data.status, host),
          host,
          source: SOURCE,
          ts: receivedAt,
          data: { ...data, hosts: [host] },
        }),
      );
      if ('invalid' in message) return message;
      messages.push(message.message);
    }
    perEvent.push(messages);
  }
  return { raw: raw.message, perEvent };
}

function checked(envelope: Envelope): { readonly message: OutgoingMessage } | { readonly invalid: { path: string; message: string } } {
  const value = JSON.stringify(envelope);
  const parsed = parseEnvelope(value);
  if (!parsed.ok) return { invalid: { path: parsed.error.path, message: parsed.error.message } };
  return { message: { key: envelope.host, value, timestamp: Date.parse(envelope.ts) } };
}

async function publishDurably(deps: IntakeDeps, raw: OutgoingMessage, messages: readonly OutgoingMessage[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Kafka did not acknowledge within ${deps.publishTimeoutMs} ms`)), deps.publishTimeoutMs);
  });
  try {
    // The raw payload first, then what it meant, on the same topic and in that order.
    const published = deps.bus
      .publish(TOPICS.providerEvents, [raw])
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
