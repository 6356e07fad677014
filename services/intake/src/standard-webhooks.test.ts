import { describe, expect, it } from 'vitest';
import { sign, verifyStandardWebhook } from './standard-webhooks.ts';

const SECRET = `whsec_${Buffer.from('a test secret of 32 bytes length').toString('base64')}`;
const NOW = 1_780_000_000;
const body = Buffer.from('{"event_id":"x-1"}');

function headers(at: number) {
  return { 'webhook-id': 'msg_1', 'webhook-timestamp': String(at), 'webhook-signature': sign(SECRET, 'msg_1', at, body) };
}

describe('a Standard Webhooks delivery is on time within 300 s either way of the intake clock', () => {
  it('takes 300 s early or late and refuses 301 s, at a clock the test sets', () => {
    for (const at of [NOW - 300, NOW, NOW + 300]) expect(verifyStandardWebhook(headers(at), body, [SECRET], NOW)).toEqual({ ok: true });
    for (const at of [NOW - 301, NOW + 301]) {
      expect(verifyStandardWebhook(headers(at), body, [SECRET], NOW)).toEqual({ ok: false, reason: 'webhook-timestamp is outside the tolerance' });
    }
  });
});
