import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { errorMessage } from '../error-message.ts';
import { answer, type IntakeDeps, type IntakeResponse, type VerifiedDelivery } from '../handle-delivery.ts';
import { tokenMatches } from '../standard-webhooks.ts';
import { KEY_SERVER_RETRY_AFTER_S, KeyCache, ProviderFetchError, type FetchAllowance } from './provider-fetch.ts';

/** The delivery protocols, one route each: `/v1/deliveries/{protocol}`. */
export const DELIVERY_PROTOCOLS = ['sns', 'eventgrid', 'pubsub', 'oci', 'azure-monitor', 'cloudevents'] as const;
export type DeliveryProtocol = (typeof DELIVERY_PROTOCOLS)[number];

/** What the protocols need besides the intake's own settings. */
export interface DeliveriesConfig {
  /** SNS topics whose deliveries are taken: anyone can subscribe our URL to a topic of their own, signed by AWS all the same. */
  readonly snsTopicArns: readonly string[];
  /** Pub/Sub push: the audience the subscription puts in its token (our URL) and the service accounts allowed to push. */
  readonly pubsub?: { readonly audience: string; readonly serviceAccounts: readonly string[] };
  /** Test-only: loopback origins allowed besides the providers' hosts. Never set from the environment. */
  readonly fetchAllowance?: FetchAllowance;
  /** Test-only: where Google's keys are fetched (an allowance origin). Never set from the environment. */
  readonly googleJwksUrl?: string;
}

/** Keys and certificates fetched at run time, shared by every request of one server. */
export interface DeliveryRuntime {
  readonly config: DeliveriesConfig;
  readonly snsCertificates: KeyCache<X509Certificate>;
  readonly googleKeys: KeyCache<ReadonlyMap<string, KeyObject>>;
}

export function createDeliveryRuntime(config: DeliveriesConfig, now: () => number): DeliveryRuntime {
  return {
    config,
    snsCertificates: new KeyCache((body) => new X509Certificate(body), now),
    googleKeys: new KeyCache(parseJwks, now),
  };
}

/** A JWKS document → RSA public keys by `kid`; a Map, so a `kid` of `__proto__` is only a name. */
function parseJwks(body: Buffer): ReadonlyMap<string, KeyObject> {
  const doc: unknown = JSON.parse(body.toString('utf8'));
  if (!isRecord(doc) || !Array.isArray(doc.keys)) throw new Error('no "keys" array');
  const keys = new Map<string, KeyObject>();
  for (const jwk of doc.keys.slice(0, 32)) {
    if (!isRecord(jwk)) continue;
    const { kid, kty } = jwk;
    if (typeof kid !== 'string' || kty !== 'RSA') continue;
    // createPublicKey checks the JWK's fields itself (and throws on a bad one).
    keys.set(kid, createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }));
  }
  if (keys.size === 0) throw new Error('no RSA key in it');
  return keys;
}

export interface ProtocolRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

export interface ProtocolDeps extends IntakeDeps {
  readonly deliveries: DeliveryRuntime;
}

/** A protocol either answers itself (a handshake, a refusal) or hands on a verified delivery. */
export type ProtocolOutcome = { readonly answer: IntakeResponse } | { readonly verified: VerifiedDelivery };

export function refuse(status: number, outcome: string, error: string, message: string, headers?: Record<string, string>): ProtocolOutcome {
  return { answer: answer(status, outcome, { error, message }, headers) };
}

export const unauthorized = (message: string): ProtocolOutcome => refuse(401, 'unauthorized', 'unauthorized', message);

/** A key server or confirmation endpoint away: 503 with Retry-After, never an unverified 202. */
export function keyServerAway(error: ProviderFetchError): ProtocolOutcome {
  return refuse(503, 'key_server_unavailable', 'key_server_unavailable', `${error.message}; retry`, { 'retry-after': String(KEY_SERVER_RETRY_AFTER_S) });
}

export function header(headers: ProtocolRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Our shared token, for senders that cannot sign: in the configured header, as the password of
 * HTTP basic auth (OCI and Azure put `user:password@` of the subscription URL there), or in the
 * URL's `token` parameter (an Event Grid or action group endpoint URL, where no header can be set).
 */
export function checkToken(request: ProtocolRequest, deps: IntakeDeps): string | undefined {
  const { token, tokenHeader } = deps.auth;
  if (!token) return 'the intake has no token configured (GPUALERT_INTAKE_TOKEN), and this protocol is verified with it';
  const offered: string[] = [];
  const inHeader = header(request.headers, tokenHeader.toLowerCase());
  if (inHeader !== undefined && !/^basic /i.test(inHeader)) offered.push(inHeader);
  const authorization = header(request.headers, 'authorization');
  if (authorization && /^basic /i.test(authorization)) {
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) offered.push(decoded.slice(colon + 1));
  }
  const inQuery = request.url.searchParams.get('token');
  if (inQuery !== null) offered.push(inQuery);
  if (offered.length === 0) return `missing the token (the ${tokenHeader} header, basic auth, or the URL's token parameter)`;
  return offered.some((value) => tokenMatches(value, token)) ? undefined : 'the token does not match';
}

/** JSON of a body, or why not. */
export function parseJson(body: Buffer): { ok: true; value: unknown } | { ok: false; outcome: ProtocolOutcome } {
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch (error) {
    return { ok: false, outcome: refuse(400, 'malformed', 'malformed_json', `the body is not JSON: ${errorMessage(error)}`) };
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
