import { createHmac, randomUUID } from 'node:crypto';
import type { Channel } from './channel.ts';
import { httpFailure, networkFailure, sendSignal } from './channel.ts';

/** Standard Webhooks signature of an outgoing body (`v1,<base64>` over `id.timestamp.body`). */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
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
      if (settings.secret) headers['webhook-signature'] = signWebhook(settings.secret, id, timestamp, body);
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
