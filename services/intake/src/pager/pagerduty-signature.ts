import { createHmac, timingSafeEqual } from 'node:crypto';

/** The most signatures one header may carry: PagerDuty sends one per signing secret, two during a rotation. */
const MAX_SIGNATURES = 8;

/**
 * PagerDuty v3 webhooks: `X-PagerDuty-Signature` holds `v1=<hex HMAC-SHA256 of the raw body>`
 * per signing secret, comma-separated (several during a rotation). Trusted when one of them is
 * the HMAC, with one of our secrets, of the very bytes received; compared in constant time.
 * (developer.pagerduty.com, "Verifying Signatures".)
 */
export function verifyPagerDutySignature(header: string | undefined, body: Buffer, secrets: readonly string[]): { ok: true } | { ok: false; reason: string } {
  if (secrets.length === 0) return { ok: false, reason: 'no PagerDuty webhook secret is configured (GPUALERT_INTAKE_PAGERDUTY_SECRETS)' };
  if (header === undefined || header.trim() === '') return { ok: false, reason: 'missing the X-PagerDuty-Signature header' };
  const offered = header
    .split(',', MAX_SIGNATURES + 1)
    .slice(0, MAX_SIGNATURES)
    .map((s) => s.trim())
    .filter((s) => s.startsWith('v1='))
    .map((s) => s.slice(3));
  if (offered.length === 0) return { ok: false, reason: 'X-PagerDuty-Signature carries no v1= signature' };
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(body).digest();
    for (const hex of offered) {
      if (!/^[0-9a-f]{64}$/i.test(hex)) continue;
      if (timingSafeEqual(Buffer.from(hex, 'hex'), expected)) return { ok: true };
    }
  }
  return { ok: false, reason: 'no X-PagerDuty-Signature matches the body with a configured secret' };
}
