import { createHmac, randomUUID } from 'node:crypto';
import type { Channel } from './channel.ts';
import { httpFailure, networkFailure, sendSignal } from './channel.ts';

/**
 * A Standard Webhooks secret is `whsec_` + base64 of 24 to 64 random bytes; the reference
 * library decodes the base64 strictly and refuses anything else, so a receiver using it could
 * never verify a signature made with a leniently decoded key.
 * Source: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md#signature-scheme
 */
export const WEBHOOK_SECRET_MIN_BYTES = 24;
export const WEBHOOK_SECRET_MAX_BYTES = 64;
const WEBHOOK_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/** Why a value is not a Standard Webhooks secret, or undefined. Never shows the value. */
export function webhookSecretProblem(secret: string): string | undefined {
  const match = WEBHOOK_SECRET.exec(secret);
  if (!match) return 'expected a Standard Webhooks secret: whsec_ followed by base64 (A-Z, a-z, 0-9, +, /, = padding)';
  const bytes = Buffer.from(match[1]!, 'base64').length;
  if (bytes < WEBHOOK_SECRET_MIN_BYTES || bytes > WEBHOOK_SECRET_MAX_BYTES) return `expected a secret of ${WEBHOOK_SECRET_MIN_BYTES} to ${WEBHOOK_SECRET_MAX_BYTES} bytes (got ${bytes})`;
  return undefined;
}

/** Standard Webhooks signature of an outgoing body (`v1,<base64>` over `id.timestamp.body`); refuses a secret that is not `whsec_` + base64. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const problem = webhookSecretProblem(secret);
  if (problem) throw new TypeError(`webhook secret: ${problem}`);
  const key = Buffer.from(secret.slice(6), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** A generic webhook, signed the Standard Webhooks way so the receiver can verify it. */
export function webhookChannel(settings: { url: string; secret?: string }, now: () => number = Date.now): Channel {
  return {
    name: 'webhook',
    async send(notification, signal) {
      const body = JSON.stringify({ type: 'gpualert.notification', notification });
      const id = `msg_${notification.id ?? randomUUID()}`;
      const timestamp = Math.floor(now() / 1000);
      const headers: Record<string, string> = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp) };
      try {
        if (settings.secret) headers['webhook-signature'] = signWebhook(settings.secret, id, timestamp, body);
      } catch (error) {
        return { ok: false, retriable: false, error: (error as Error).message };
      }
      try {
        const response = await fetch(settings.url, { method: 'POST', headers, body, signal: sendSignal(signal) });
        const text = await response.text();
        return response.ok ? { ok: true } : httpFailure(response.status, text, response.headers.get('retry-after'));
      } catch (error) {
        return networkFailure(error);
      }
    },
  };
}
