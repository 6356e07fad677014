import { redactUrl } from '@gpualert/log';
import { z } from 'zod';
import type { ChannelName } from './channel-names.ts';
import { JIRA_DEPLOYMENTS } from './jira.ts';
import { WEBHOOK_FORMATS, webhookSecretProblem } from './webhook.ts';

/** The channels a receiver can use (channel-names.ts), for the settings schemas and the route file alike. */
export { CHANNELS, type ChannelName } from './channel-names.ts';

/** The longest setting value: URLs and keys are far shorter; a megabyte of YAML in one value is a mistake. */
export const MAX_SETTING_LENGTH = 2048;

type Kind = 'http_url' | 'smtp_url' | 'text' | 'webhook_secret' | 'jira_deployment' | 'webhook_format' | 'count';
interface Field {
  readonly kind: Kind;
  readonly required: boolean;
  /** The values a text setting may take, and how the refusal says them. */
  readonly oneOf?: { readonly values: readonly string[]; readonly expected: string };
}
const url: Field = { kind: 'http_url', required: true };
const mayUrl: Field = { kind: 'http_url', required: false };
const need: Field = { kind: 'text', required: true };
const may: Field = { kind: 'text', required: false };

/** Each channel's settings: which keys it needs, which it may take, and which are URLs. */
export const CHANNEL_SETTINGS: Readonly<Record<ChannelName, Readonly<Record<string, Field>>>> = {
  slack: { url, channel: may, icon_url: mayUrl, image_url: mayUrl },
  feishu: { url, secret: may },
  dingtalk: { url, secret: may },
  wecom: { url },
  email: { smtp_url: { kind: 'smtp_url', required: true }, from: need, to: need },
  jira: { url, user: need, token: need, project: need, issue_type: may, done_transition: may, deployment: { kind: 'jira_deployment', required: false } },
  servicenow: { url, user: need, password: need, close_code: may },
  // routing_key: Events API v2; service_key: Events API v1 (Alertmanager's older integrations). One of them (alertmanager-receivers.ts and load-routes check which).
  pagerduty: { url, routing_key: may, service_key: may },
  opsgenie: { url, api_key: need },
  // url: the REST endpoint up to its api key (…/integrations/generic/20131114/alert/); message_type: one of CRITICAL, WARNING, INFO.
  victorops: { url, api_key: need, routing_key: need, message_type: { kind: 'text', required: false, oneOf: { values: ['CRITICAL', 'WARNING', 'INFO'], expected: 'CRITICAL, WARNING or INFO (a resolve is sent as RECOVERY)' } } },
  pushover: { url, token: need, user_key: need, priority: { kind: 'text', required: false, oneOf: { values: ['-2', '-1', '0', '1', '2'], expected: 'a priority from -2 to 2' } }, sound: may, device: may },
  webhook: { url, secret: { kind: 'webhook_secret', required: false }, format: { kind: 'webhook_format', required: false }, max_alerts: { kind: 'count', required: false } },
  console: {},
  record: {},
};

const ENV_REF = /^env:[A-Za-z_][A-Za-z0-9_]*$/;
export function isEnvRef(value: unknown): value is string {
  return typeof value === 'string' && ENV_REF.test(value);
}

/** Why a value is not a fit URL for this kind of setting, or undefined. The value shows redacted only. */
export function urlProblem(value: string, kind: 'http_url' | 'smtp_url'): string | undefined {
  const schemes = kind === 'http_url' ? ['http:', 'https:'] : ['smtp:', 'smtps:'];
  const expected = `expected a URL with scheme ${schemes.map((s) => `${s}//`).join(' or ')}`;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return `${expected} (got "${redactUrl(value)}")`;
  }
  if (!schemes.includes(parsed.protocol) || !parsed.hostname) return `${expected} (got "${redactUrl(value)}")`;
  // Credentials in an HTTP URL end up in logs and error messages; they belong in their own settings.
  if (kind === 'http_url' && (parsed.username || parsed.password)) return 'the URL must not carry user:password; put credentials in their own settings (user, token, password)';
  return undefined;
}

/**
 * A channel's settings as a zod schema. At load a value may be `env:NAME` (read at start); at start
 * the resolved values are checked again with `allowEnv: false`.
 */
export function channelSettings(channel: ChannelName, allowEnv: boolean): z.ZodType<Record<string, string>> {
  const fields = CHANNEL_SETTINGS[channel];
  return z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).transform((settings, ctx) => {
    const out: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [key, raw] of Object.entries(settings)) {
      const field = Object.hasOwn(fields, key) ? fields[key] : undefined;
      if (!field) {
        ctx.addIssue({ code: 'custom', path: [key], message: `${channel} takes no setting "${key}" (it takes ${Object.keys(fields).join(', ') || 'none'})` });
        continue;
      }
      const value = String(raw);
      if (value.length > MAX_SETTING_LENGTH) {
        ctx.addIssue({ code: 'custom', path: [key], message: `longer than ${MAX_SETTING_LENGTH} characters` });
        continue;
      }
      out[key] = value;
      if (allowEnv && isEnvRef(value)) continue;
      if (field.kind === 'webhook_secret') {
        const problem = webhookSecretProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
      } else if (field.kind === 'jira_deployment') {
        if (!(JIRA_DEPLOYMENTS as readonly string[]).includes(value)) ctx.addIssue({ code: 'custom', path: [key], message: `expected one of ${JIRA_DEPLOYMENTS.join(', ')}` });
      } else if (field.kind === 'webhook_format') {
        if (!(WEBHOOK_FORMATS as readonly string[]).includes(value)) ctx.addIssue({ code: 'custom', path: [key], message: `expected one of ${WEBHOOK_FORMATS.join(', ')}` });
      } else if (field.kind === 'count') {
        if (!/^\d{1,9}$/.test(value)) ctx.addIssue({ code: 'custom', path: [key], message: 'expected a whole number, 0 or more' });
      } else if (field.oneOf) {
        if (!field.oneOf.values.includes(value)) ctx.addIssue({ code: 'custom', path: [key], message: `expected ${field.oneOf.expected}` });
      } else if (field.kind !== 'text') {
        const problem = urlProblem(value, field.kind);
        if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
      }
    }
    for (const [key, field] of Object.entries(fields)) {
      if (field.required && !(Object.hasOwn(out, key) && out[key] !== '')) ctx.addIssue({ code: 'custom', path: [key], message: `${channel} needs settings.${key}` });
    }
    if (channel === 'pagerduty' && !out.routing_key === !out.service_key) {
      ctx.addIssue({ code: 'custom', path: ['routing_key'], message: 'pagerduty needs one of settings.routing_key (Events API v2) and settings.service_key (Events API v1)' });
    }
    return out;
  });
}
