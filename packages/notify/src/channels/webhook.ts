import { createHmac, randomUUID } from 'node:crypto';
import { stringifyPaced } from '@gpualert/schema';
import { annotationsOf } from '../go-template-data.ts';
import type { Notification } from '../notifier-types.ts';
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
  const bytes = Buffer.from(match[1] ?? '', 'base64').length; // the group always takes part, maybe empty
  if (bytes < WEBHOOK_SECRET_MIN_BYTES || bytes > WEBHOOK_SECRET_MAX_BYTES)
    return `expected a secret of ${WEBHOOK_SECRET_MIN_BYTES} to ${WEBHOOK_SECRET_MAX_BYTES} bytes (got ${bytes})`;
  return undefined;
}

/** Standard Webhooks signature of an outgoing body (`v1,<base64>` over `id.timestamp.body`); refuses a secret that is not `whsec_` + base64. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const problem = webhookSecretProblem(secret);
  if (problem) throw new TypeError(`webhook secret: ${problem}`);
  const key = Buffer.from(secret.slice(6), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The body formats a webhook sends: gpualert's own, or Alertmanager's (for receivers from its `webhook_configs`). */
export const WEBHOOK_FORMATS = ['gpualert', 'alertmanager'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

/** Alertmanager's "zero" time: what its webhook sends as endsAt of an alert still firing. */
const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

function common(maps: readonly Readonly<Record<string, string>>[]): Record<string, string> {
  const out: Record<string, string> = {};
  const [first, ...rest] = maps;
  for (const [k, v] of Object.entries(first ?? {})) if (rest.every((m) => Object.hasOwn(m, k) && m[k] === v)) out[k] = v;
  return out;
}

/**
 * Alertmanager's webhook payload, version 4 (notify/webhook/webhook.go): the receiver, the whole
 * group (what fires and what resolved since the last message), its group and common labels.
 * `maxAlerts` (webhook_configs' max_alerts) cuts the list and counts what was cut.
 */
export function alertmanagerPayload(notification: Notification, maxAlerts = 0, externalURL = '') {
  const group = notification.alertmanager;
  const all = group?.alerts ?? notification.alerts;
  const alerts = maxAlerts > 0 ? all.slice(0, maxAlerts) : all;
  return {
    receiver: group?.receiver ?? notification.receiver,
    status: all.some((a) => a.status === 'firing') ? 'firing' : 'resolved',
    alerts: alerts.map((a) => ({
      status: a.status,
      labels: { ...a.labels },
      annotations: { ...annotationsOf(a) },
      startsAt: a.startsAt,
      endsAt: a.status === 'resolved' ? (a.endsAt ?? a.startsAt) : GO_ZERO_TIME,
      generatorURL: a.evidence.find((e) => /^https?:\/\//.test(e)) ?? '',
      fingerprint: a.fingerprint,
    })),
    groupLabels: { ...(group?.groupLabels ?? {}) },
    commonLabels: common(all.map((a) => a.labels)),
    commonAnnotations: common(all.map(annotationsOf)),
    externalURL,
    version: '4',
    groupKey: notification.group,
    truncatedAlerts: all.length - alerts.length,
  };
}

/**
 * A generic webhook, signed the Standard Webhooks way so the receiver can verify it; its body is
 * gpualert's notification, or Alertmanager's payload for a receiver from `webhook_configs`.
 */
export function webhookChannel(settings: { url: string; secret?: string; format?: WebhookFormat; max_alerts?: number }, now: () => number = Date.now): Channel {
  return {
    name: 'webhook',
    async send(notification, signal) {
      // A storm's group is megabytes: written in slices that yield to the event loop.
      const body = await stringifyPaced(
        settings.format === 'alertmanager' ? alertmanagerPayload(notification, settings.max_alerts ?? 0) : { type: 'gpualert.notification', notification },
      );
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
