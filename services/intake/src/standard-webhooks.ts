import { createHmac, timingSafeEqual } from 'node:crypto';

export type VerifyResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** The HMAC key of a `whsec_<base64>` secret (a secret without the prefix is used as base64 too). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

/** `v1,<base64>` over `{id}.{timestamp}.{body}`: what a sender puts in `webhook-signature`. */
export function sign(secret: string, id: string, timestamp: number, body: Buffer | string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/**
 * Standard Webhooks verification over the raw bytes: `webhook-id`, `webhook-timestamp` (unix
 * seconds, within the tolerance both ways) and any `v1,` entry of `webhook-signature` matching
 * any of the secrets (several during rotation), compared in constant time.
 */
export function verifyStandardWebhook(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: Buffer,
  secrets: readonly string[],
  nowSeconds: number,
  toleranceSeconds = 300,
): VerifyResult {
  const id = single(headers['webhook-id']);
  const timestamp = single(headers['webhook-timestamp']);
  const signature = single(headers['webhook-signature']);
  if (!id || !timestamp || !signature) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'webhook-timestamp is not unix seconds' };
  const ts = Number(timestamp);
  if (Math.abs(nowSeconds - ts) > toleranceSeconds) return { ok: false, reason: 'webhook-timestamp is outside the tolerance' };
  const offered = signature
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => Buffer.from(entry.slice(3), 'base64'));
  for (const secret of secrets) {
    const expected = Buffer.from(sign(secret, id, ts, body).slice(3), 'base64');
    if (offered.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected))) return { ok: true };
  }
  return { ok: false, reason: 'no signature matches' };
}

/** Constant-time comparison of a header token. */
export function tokenMatches(offered: string | undefined, expected: string): boolean {
  if (offered === undefined) return false;
  const value = offered.startsWith('Bearer ') ? offered.slice(7) : offered;
  const a = Buffer.from(value);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
