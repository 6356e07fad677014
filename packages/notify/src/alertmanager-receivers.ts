import type { z } from 'zod';
import type { GlobalConfig } from './alertmanager-global.ts';
import { CHANNELS, channelSettings, type ChannelName } from './channels/channel-settings.ts';
import type { CompiledTemplate } from './go-template.ts';
import { TEMPLATE_FIELDS, type TemplateField } from './receiver-templates.ts';

/** Alertmanager's `global:` (alertmanager-global.ts), read by the integrations' mappings. */
export { GlobalConfig } from './alertmanager-global.ts';

/**
 * Alertmanager's receivers (`name` plus `*_configs` lists, several integrations each) mapped onto
 * gpualert's channels. A field we cannot honour is refused naming it, never dropped: a config that
 * loads does what it says.
 */

/** One integration: a channel with its settings (what the registry builds a sender from). */
export interface Integration {
  readonly name: string;
  readonly channel: ChannelName;
  readonly settings: Record<string, string | number | boolean>;
  readonly per_minute?: number | undefined;
  readonly per_second?: number | undefined;
  /** Alertmanager's `send_resolved`: false drops resolved alerts from this integration's messages. */
  readonly send_resolved: boolean;
  /** Go-template fields (slack title/text, email subject/html/text, pagerduty description, opsgenie message/description). */
  readonly templates?: Readonly<Record<string, TemplateField>>;
  /** The same, compiled against Alertmanager's default templates and the file's `templates:` (not enumerable: never serialized). */
  readonly compiled?: Readonly<Record<string, CompiledTemplate>>;
}

type Raw = Record<string, unknown>;
type Ctx = z.RefinementCtx;
interface Mapping {
  readonly channel: ChannelName;
  /** Alertmanager's default for send_resolved on this integration. */
  readonly sendResolved: boolean;
  /** Builds our settings; reports a problem at a field. */
  readonly settings: (raw: Raw, global: GlobalConfig, issue: (field: string, message: string) => void) => Record<string, string>;
  /** Fields this mapping reads. */
  readonly fields: readonly string[];
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** Fields Alertmanager templates but gpualert sends as written: a template there is refused, never sent as text. */
function untemplated(raw: Raw, fields: readonly string[], issue: (field: string, message: string) => void): void {
  for (const field of fields) {
    if (str(raw[field])?.includes('{{')) issue(field, 'a template is not supported in this field by gpualert (it would be sent as written)');
  }
}
/** Pushover's message API. Source: https://pushover.net/api */
const PUSHOVER_URL = 'https://api.pushover.net/1/messages.json';
/** Alertmanager's default victorops api_url; the api key and routing key follow it as path segments. */
const VICTOROPS_API_URL = 'https://alert.victorops.com/integrations/generic/20131114/alert/';
/** PagerDuty's Events API v1 endpoint. Source: https://developer.pagerduty.com/docs/events-api-v1-overview (POST …/generic/2010-04-15/create_event.json) */
const PAGERDUTY_V1_URL = 'https://events.pagerduty.com/generic/2010-04-15/create_event.json';

/** Alertmanager's integrations that map onto a gpualert channel. */
const ALERTMANAGER: Readonly<Record<string, Mapping>> = {
  webhook_configs: {
    channel: 'webhook', sendResolved: true, fields: ['url', 'secret', 'max_alerts'],
    settings: (raw, _g, issue) => {
      if (!str(raw.url)) issue('url', 'a webhook needs url');
      if (raw.max_alerts !== undefined && !(Number.isInteger(raw.max_alerts) && (raw.max_alerts as number) >= 0)) issue('max_alerts', 'expected a whole number, 0 or more');
      // Alertmanager's payload (version 4), so what reads Alertmanager's webhooks reads ours unchanged.
      return { url: str(raw.url) ?? '', format: 'alertmanager', ...(str(raw.secret) ? { secret: str(raw.secret)! } : {}), ...(typeof raw.max_alerts === 'number' && raw.max_alerts > 0 ? { max_alerts: String(raw.max_alerts) } : {}) };
    },
  },
  slack_configs: {
    channel: 'slack', sendResolved: false, fields: ['api_url', 'channel', 'title', 'text', 'username', 'icon_emoji', 'icon_url', 'image_url'],
    settings: (raw, g, issue) => {
      const url = str(raw.api_url) ?? g.slack_api_url;
      if (!url) issue('api_url', 'no api_url here and no global slack_api_url');
      if (raw.channel !== undefined && !str(raw.channel)) issue('channel', 'expected a channel name, such as #gpu-alerts');
      // Sent as they are (the message's icon, an image block): a URL, not a template, here.
      const look: Record<string, string> = {};
      for (const field of ['icon_url', 'image_url'] as const) {
        const value = str(raw[field]);
        if (value !== undefined && !value.includes('{{')) look[field] = value;
        else if (raw[field] !== undefined) issue(field, 'expected a URL (a template is not supported in this field by gpualert)');
      }
      return { url: url ?? '', ...(str(raw.channel) ? { channel: str(raw.channel)! } : {}), ...look };
    },
  },
  email_configs: {
    channel: 'email', sendResolved: false, fields: ['to', 'from', 'smarthost', 'hello', 'auth_username', 'auth_password', 'require_tls', 'html', 'text', 'headers'],
    settings: (raw, g, issue) => {
      const host = str(raw.smarthost) ?? g.smtp_smarthost;
      const from = str(raw.from) ?? g.smtp_from;
      if (!host) issue('smarthost', 'no smarthost here and no global smtp_smarthost');
      if (!from) issue('from', 'no from here and no global smtp_from');
      if (!str(raw.to)) issue('to', 'an email integration needs to');
      const user = str(raw.auth_username) ?? g.smtp_auth_username;
      const password = str(raw.auth_password) ?? g.smtp_auth_password;
      const auth = user ? `${encodeURIComponent(user)}${password ? `:${encodeURIComponent(password)}` : ''}@` : '';
      // Port 465 is implicit TLS; elsewhere STARTTLS, which Alertmanager requires unless require_tls
      // (or global smtp_require_tls) is false: sent as required, not merely taken when offered.
      const implicit = host?.endsWith(':465') === true;
      if (raw.require_tls !== undefined && typeof raw.require_tls !== 'boolean') issue('require_tls', 'expected true or false');
      const requireTls = typeof raw.require_tls === 'boolean' ? raw.require_tls : g.smtp_require_tls ?? true;
      const hello = str(raw.hello) ?? g.smtp_hello;
      const query = new URLSearchParams({ ...(requireTls && !implicit ? { requireTLS: 'true' } : {}), ...(hello ? { name: hello } : {}) }).toString();
      return { smtp_url: `${implicit ? 'smtps' : 'smtp'}://${auth}${host ?? ''}${query ? `?${query}` : ''}`, from: from ?? '', to: str(raw.to) ?? '' };
    },
  },
  pagerduty_configs: {
    channel: 'pagerduty', sendResolved: true, fields: ['routing_key', 'service_key', 'url', 'description'],
    settings: (raw, g, issue) => {
      const routing = str(raw.routing_key);
      const service = str(raw.service_key);
      if (!routing && !service) issue('routing_key', 'a pagerduty integration needs routing_key (Events API v2) or service_key (Events API v1)');
      if (routing && service) issue('service_key', 'one of routing_key (Events API v2) and service_key (Events API v1), not both');
      untemplated(raw, ['routing_key', 'service_key'], issue);
      // Events API v1 at its own endpoint, as Alertmanager sends it: Alertmanager ignores url there, so a url given with it is refused rather than ignored.
      if (service && raw.url !== undefined) issue('url', 'Alertmanager sends Events API v1 (service_key) to its own endpoint and ignores url; remove url, or use routing_key (Events API v2)');
      if (service && !routing) return { url: PAGERDUTY_V1_URL, service_key: service };
      return { url: str(raw.url) ?? g.pagerduty_url ?? 'https://events.pagerduty.com/v2/enqueue', routing_key: routing ?? '' };
    },
  },
  opsgenie_configs: {
    channel: 'opsgenie', sendResolved: true, fields: ['api_key', 'api_url', 'message', 'description'],
    settings: (raw, g, issue) => {
      const key = str(raw.api_key) ?? g.opsgenie_api_key;
      if (!key) issue('api_key', 'no api_key here and no global opsgenie_api_key');
      return { url: str(raw.api_url) ?? g.opsgenie_api_url ?? 'https://api.opsgenie.com/', api_key: key ?? '' };
    },
  },
  victorops_configs: {
    channel: 'victorops', sendResolved: true, fields: ['api_key', 'api_url', 'routing_key', 'message_type', 'entity_display_name', 'state_message', 'monitoring_tool'],
    settings: (raw, g, issue) => {
      const key = str(raw.api_key) ?? g.victorops_api_key;
      if (!key) issue('api_key', 'no api_key here and no global victorops_api_key');
      if (!str(raw.routing_key)) issue('routing_key', 'a victorops integration needs routing_key');
      untemplated(raw, ['routing_key', 'message_type'], issue);
      if (raw.message_type !== undefined && !str(raw.message_type)) issue('message_type', 'expected CRITICAL, WARNING or INFO');
      // Alertmanager's default message_type: CRITICAL for every firing group, whatever its severity.
      const type = str(raw.message_type) ?? 'CRITICAL';
      return { url: str(raw.api_url) ?? g.victorops_api_url ?? VICTOROPS_API_URL, api_key: key ?? '', routing_key: str(raw.routing_key) ?? '', message_type: type };
    },
  },
  pushover_configs: {
    channel: 'pushover', sendResolved: true, fields: ['user_key', 'token', 'priority', 'sound', 'device'],
    settings: (raw, _g, issue) => {
      if (!str(raw.user_key)) issue('user_key', 'a pushover integration needs user_key');
      if (!str(raw.token)) issue('token', 'a pushover integration needs token');
      untemplated(raw, ['user_key', 'token'], issue);
      // Alertmanager's priority is a template (2 while firing, 0 resolved, by default); here a number from -2 to 2, or that default.
      const priority = raw.priority === undefined ? undefined : String(raw.priority);
      if (priority !== undefined && priority.includes('{{')) issue('priority', 'expected a priority from -2 to 2 (a template is not supported in this field by gpualert; without one: 2 while firing, 0 resolved)');
      const text = (field: string) => (str(raw[field]) ? { [field]: str(raw[field])! } : {});
      return { url: PUSHOVER_URL, token: str(raw.token) ?? '', user_key: str(raw.user_key) ?? '', ...(priority !== undefined && !priority.includes('{{') ? { priority } : {}), ...text('sound'), ...text('device') };
    },
  },
};

/** Alertmanager integrations with no gpualert channel yet: refused with the reason. */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  wechat_configs: 'WeChat Work\'s app API (corp_id, api_secret) is not supported; use wecom_configs with a WeCom group robot url',
  msteams_configs: 'Microsoft Teams is not a gpualert channel yet',
  sns_configs: 'Amazon SNS is not a gpualert channel', telegram_configs: 'Telegram is not a gpualert channel',
  webex_configs: 'Webex is not a gpualert channel', discord_configs: 'Discord is not a gpualert channel',
};

/** What every integration may carry besides its own fields. */
const COMMON = ['send_resolved', 'per_minute', 'per_second'];

/** gpualert's own channels as extra `<channel>_configs` keys, taking the channel's settings. */
const OWN = CHANNELS.filter((c) => !['webhook', 'slack', 'email', 'pagerduty', 'opsgenie', 'victorops', 'pushover'].includes(c));

export const RECEIVER_CONFIG_KEYS = [...Object.keys(ALERTMANAGER), ...OWN.map((c) => `${c}_configs`), ...Object.keys(UNSUPPORTED)];

/** An Alertmanager receiver's integrations, each checked as the channel checks its settings; issues at their field. */
export function integrationsOf(receiver: Raw, global: GlobalConfig, ctx: Ctx, path: (string | number)[]): Integration[] {
  const name = String(receiver.name);
  const out: Integration[] = [];
  const keys = Object.keys(receiver).filter((k) => k.endsWith('_configs'));
  let total = 0;
  for (const key of keys) total += Array.isArray(receiver[key]) ? (receiver[key] as unknown[]).length : 0;
  for (const key of keys) {
    const list = receiver[key];
    if (Object.hasOwn(UNSUPPORTED, key)) {
      ctx.addIssue({ code: 'custom', path: [...path, key], message: UNSUPPORTED[key]! });
      continue;
    }
    if (!Array.isArray(list)) {
      ctx.addIssue({ code: 'custom', path: [...path, key], message: 'expected a list' });
      continue;
    }
    const own = key.slice(0, -'_configs'.length) as ChannelName;
    const mapping = Object.hasOwn(ALERTMANAGER, key) ? ALERTMANAGER[key]! : (OWN as readonly string[]).includes(own) ? undefined : null;
    if (mapping === null) {
      ctx.addIssue({ code: 'custom', path: [...path, key], message: `unknown integration ${key}` });
      continue;
    }
    list.forEach((item: unknown, i) => {
      const at = [...path, key, i];
      if (!item || typeof item !== 'object' || Array.isArray(item)) {
        ctx.addIssue({ code: 'custom', path: at, message: 'expected a mapping' });
        return;
      }
      const raw = item as Raw;
      const issue = (field: string, message: string) => ctx.addIssue({ code: 'custom', path: [...at, field], message });
      const known = mapping ? [...mapping.fields, ...COMMON] : [...COMMON];
      const settingsRaw: Raw = mapping ? raw : Object.fromEntries(Object.entries(raw).filter(([k]) => !COMMON.includes(k)));
      if (mapping) {
        for (const field of Object.keys(raw)) {
          if (!known.includes(field)) issue(field, `${key.slice(0, -'_configs'.length)}: "${field}" is not supported by gpualert (it would be ignored, so it is refused; see "Coming from Alertmanager" in the README)`);
        }
      }
      for (const field of ['send_resolved'] as const) if (raw[field] !== undefined && typeof raw[field] !== 'boolean') issue(field, 'expected true or false');
      for (const field of ['per_minute', 'per_second'] as const) if (raw[field] !== undefined && !(typeof raw[field] === 'number' && raw[field] > 0)) issue(field, 'expected a positive number');
      const channel = mapping ? mapping.channel : own;
      const templates = templateFields(key, raw, at, issue);
      const settings = mapping ? mapping.settings(settingsRaw, global, issue) : settingsRaw;
      const checked = channelSettings(channel, true).safeParse(settings);
      if (!checked.success) for (const problem of checked.error.issues) issue(mapField(mapping, String(problem.path[0] ?? '')), problem.message);
      out.push({
        name: total === 1 ? name : `${name}/${key.slice(0, -'_configs'.length)}/${i}`,
        channel,
        settings: settings as Record<string, string>,
        send_resolved: typeof raw.send_resolved === 'boolean' ? raw.send_resolved : mapping ? mapping.sendResolved : true,
        ...(Object.keys(templates).length > 0 ? { templates } : {}),
        ...(typeof raw.per_minute === 'number' ? { per_minute: raw.per_minute } : {}),
        ...(typeof raw.per_second === 'number' ? { per_second: raw.per_second } : {}),
      });
    });
  }
  return out;
}

/** The integration's Go-template fields, with their paths; email's `headers` may hold only Subject (the rest would be ignored). */
function templateFields(key: string, raw: Raw, at: (string | number)[], issue: (field: string, message: string) => void): Record<string, TemplateField> {
  const out = Object.create(null) as Record<string, TemplateField>;
  for (const field of TEMPLATE_FIELDS[key] ?? []) {
    if (field === 'subject' || raw[field] === undefined) continue;
    if (typeof raw[field] !== 'string') issue(field, 'expected a template (a string)');
    else out[field] = { source: raw[field], path: [...at, field] };
  }
  if (key === 'email_configs' && raw.headers !== undefined) {
    if (!raw.headers || typeof raw.headers !== 'object' || Array.isArray(raw.headers)) issue('headers', 'expected a mapping of header names to templates');
    else {
      for (const [name, value] of Object.entries(raw.headers as Raw)) {
        if (name.toLowerCase() !== 'subject') issue(`headers.${name}`, `email header "${name}" is not supported by gpualert (only Subject; it would be ignored, so it is refused)`);
        else if (typeof value !== 'string') issue(`headers.${name}`, 'expected a template (a string)');
        else out.subject = { source: value, path: [...at, 'headers', name] };
      }
    }
  }
  return out;
}

/** Our setting's name back to the Alertmanager field it came from, for the error's path. */
function mapField(mapping: Mapping | undefined, setting: string): string {
  if (!mapping) return setting;
  const back: Record<string, string> = { url: ['slack', 'opsgenie', 'victorops'].includes(mapping.channel) ? 'api_url' : 'url', smtp_url: 'smarthost' };
  return back[setting] ?? setting;
}
