import { verify } from 'node:crypto';
import {
  header,
  isRecord,
  keyServerAway,
  parseJson,
  refuse,
  unauthorized,
  type ProtocolDeps,
  type ProtocolOutcome,
  type ProtocolRequest,
} from './delivery-protocol.ts';
import { innerDelivery } from './inner-delivery.ts';
import { allowedUrl, ProviderFetchError } from './provider-fetch.ts';

/** Where Google publishes the keys that sign its OIDC tokens (JWK form). */
export const GOOGLE_JWKS_URL = 'https://www.googleapis.com/oauth2/v3/certs';
const GOOGLE_HOST = /^www\.googleapis\.com$/;
/** The issuers Google writes in a Pub/Sub push token. */
const GOOGLE_ISSUERS = new Set(['accounts.google.com', 'https://accounts.google.com']);
/** Clock skew allowed on `exp`, `iat` and `nbf`: Google's and our clocks are NTP-synced; a minute covers the rest. */
export const JWT_CLOCK_SKEW_S = 60;
/** A Google ID token is about 1 KB; 8 KB refuses a giant header before it is decoded. */
export const MAX_JWT_CHARS = 8_192;
/** A token naming a key we do not hold refetches Google's keys at most this often: they rotate over days, a flood must not fan out. */
export const JWKS_REFRESH_MIN_MS = 60_000;

function decodePart(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Pub/Sub push with authentication: the `Authorization: Bearer` OIDC token is an RS256 JWT by
 * Google, checked against Google's published keys (cached), its issuer, its audience (our
 * configured audience) and its service account (one of ours: anyone can push to our URL from a
 * project of their own with a Google-signed token). The envelope's `message.data` (base64) is
 * the provider's event (a Cloud Logging entry of a Compute Engine system event, or any event the
 * adapters read); `messageId` identifies the delivery.
 */
export async function pubsubDelivery(request: ProtocolRequest, deps: ProtocolDeps): Promise<ProtocolOutcome> {
  const { config } = deps.deliveries;
  if (!config.pubsub)
    return unauthorized(
      'the intake has no Pub/Sub audience and service account configured (GPUALERT_INTAKE_PUBSUB_AUDIENCE, GPUALERT_INTAKE_PUBSUB_SERVICE_ACCOUNTS)',
    );
  const authorization = header(request.headers, 'authorization') ?? '';
  if (!/^Bearer /i.test(authorization)) return unauthorized('missing the Authorization: Bearer token (turn on authentication in the push subscription)');
  const token = authorization.slice(7).trim();
  if (token.length > MAX_JWT_CHARS) return unauthorized(`the token is longer than ${MAX_JWT_CHARS} characters`);
  const parts = token.split('.');
  const [headPart = '', claimsPart = '', signaturePart = ''] = parts;
  const [head, claims] = [decodePart(headPart), decodePart(claimsPart)];
  if (parts.length !== 3 || !head || !claims) return unauthorized('the token is not a JWT');
  if (head.alg !== 'RS256' || typeof head.kid !== 'string') return unauthorized('the token is not RS256 with a key id');

  const jwksUrl = config.googleJwksUrl !== undefined ? allowedUrl(config.googleJwksUrl, GOOGLE_HOST, config.fetchAllowance) : new URL(GOOGLE_JWKS_URL);
  if (!jwksUrl) throw new Error('googleJwksUrl is not an allowed origin'); // a test set-up mistake, not a delivery's
  let key;
  try {
    key =
      (await deps.deliveries.googleKeys.key(jwksUrl)).get(head.kid) ??
      (await deps.deliveries.googleKeys.key(jwksUrl, { refreshOlderThanMs: JWKS_REFRESH_MIN_MS })).get(head.kid);
  } catch (error) {
    if (error instanceof ProviderFetchError) return keyServerAway(error);
    throw error;
  }
  if (!key) return unauthorized('the token is signed with a key Google does not publish');
  if (!verify('sha256', Buffer.from(`${headPart}.${claimsPart}`), key, Buffer.from(signaturePart, 'base64url')))
    return unauthorized('the token signature does not verify');

  const now = deps.now() / 1000;
  if (typeof claims.exp !== 'number' || claims.exp + JWT_CLOCK_SKEW_S < now) return unauthorized('the token has expired');
  if (typeof claims.iat === 'number' && claims.iat - JWT_CLOCK_SKEW_S > now) return unauthorized('the token is issued in the future');
  if (!GOOGLE_ISSUERS.has(String(claims.iss))) return unauthorized('the token is not issued by accounts.google.com');
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(config.pubsub.audience)) return unauthorized('the token is for another audience');
  if (claims.email_verified !== true || !config.pubsub.serviceAccounts.includes(String(claims.email))) {
    return refuse(
      403,
      'forbidden',
      'service_account_not_allowed',
      `the token's service account is not one of the intake's (GPUALERT_INTAKE_PUBSUB_SERVICE_ACCOUNTS)`,
    );
  }

  const parsed = parseJson(request.body);
  if (!parsed.ok) return parsed.outcome;
  const message = isRecord(parsed.value) && isRecord(parsed.value.message) ? parsed.value.message : undefined;
  if (!message || typeof message.messageId !== 'string' || typeof message.data !== 'string') {
    return refuse(400, 'malformed', 'not_pubsub', 'expected a push envelope: { message: { data, messageId, … }, subscription } (turn off payload unwrapping)');
  }
  let event: unknown;
  try {
    event = JSON.parse(Buffer.from(message.data, 'base64').toString('utf8'));
  } catch {
    return refuse(422, 'unrecognised', 'unrecognised_payload', 'message.data: expected base64 of a JSON event');
  }
  return innerDelivery('pubsub', [event], message.messageId);
}
