import type { z } from 'zod';
import type { GlobalConfig } from './alertmanager-global.ts';
import { ALL_CHANNELS, type ChannelName } from './channels/all-channels.ts';
import type { FieldIssue, RawIntegration } from './channels/alertmanager-integration.ts';
import type { ChannelDescriptor } from './channels/channel-descriptor.ts';
import type { CompiledTemplate } from './go-template.ts';
import type { TemplateField } from './receiver-templates.ts';

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

/**
 * Each `*_configs` key a receiver may hold → the channel it maps onto: a channel's own Alertmanager
 * integration (its descriptor's `alertmanager`), else `<name>_configs` taking gpualert's settings.
 */
const INTEGRATION_KEYS: ReadonlyMap<string, ChannelDescriptor<ChannelName>> = new Map(ALL_CHANNELS.map((d) => [d.alertmanager?.key ?? `${d.name}_configs`, d]));

/** Alertmanager integrations with no gpualert channel yet: refused with the reason. */
const UNSUPPORTED: ReadonlyMap<string, string> = new Map([
  ['wechat_configs', "WeChat Work's app API (corp_id, api_secret) is not supported; use wecom_configs with a WeCom group robot url"],
  ['msteams_configs', 'Microsoft Teams is not a gpualert channel yet'],
  ['sns_configs', 'Amazon SNS is not a gpualert channel'],
  ['telegram_configs', 'Telegram is not a gpualert channel'],
  ['webex_configs', 'Webex is not a gpualert channel'],
  ['discord_configs', 'Discord is not a gpualert channel'],
]);

/** What every integration may carry besides its own fields. */
const COMMON = ['send_resolved', 'per_minute', 'per_second'];

/** Every `*_configs` key a receiver may hold: each channel's, and those refused with the reason. */
export const RECEIVER_CONFIG_KEYS = [...INTEGRATION_KEYS.keys(), ...UNSUPPORTED.keys()];

/** A YAML mapping (not a list, not a scalar). */
function isMapping(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The settings as the route file holds them: its scalar values (anything else was refused by the channel's schema). */
function scalars(raw: Raw): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = Object.create(null) as Record<string, string | number | boolean>;
  for (const [key, value] of Object.entries(raw)) if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[key] = value;
  return out;
}

/** An Alertmanager receiver's integrations, each checked as the channel checks its settings; issues at their field. */
export function integrationsOf(receiver: Raw, global: GlobalConfig, ctx: Ctx, path: (string | number)[]): Integration[] {
  const name = String(receiver.name);
  const out: Integration[] = [];
  const keys = Object.keys(receiver).filter((k) => k.endsWith('_configs'));
  let total = 0;
  for (const key of keys) {
    const list = receiver[key];
    total += Array.isArray(list) ? list.length : 0;
  }
  for (const key of keys) {
    const list = receiver[key];
    const unsupported = UNSUPPORTED.get(key);
    if (unsupported !== undefined) {
      ctx.addIssue({ code: 'custom', path: [...path, key], message: unsupported });
      continue;
    }
    if (!Array.isArray(list)) {
      ctx.addIssue({ code: 'custom', path: [...path, key], message: 'expected a list' });
      continue;
    }
    const descriptor = INTEGRATION_KEYS.get(key);
    if (!descriptor) {
      ctx.addIssue({ code: 'custom', path: [...path, key], message: `unknown integration ${key}` });
      continue;
    }
    const mapping = descriptor.alertmanager;
    const type = key.slice(0, -'_configs'.length);
    list.forEach((item: unknown, i) => {
      const at = [...path, key, i];
      if (!isMapping(item)) {
        ctx.addIssue({ code: 'custom', path: at, message: 'expected a mapping' });
        return;
      }
      const raw = item;
      const issue: FieldIssue = (field, message) => ctx.addIssue({ code: 'custom', path: [...at, field], message });
      if (mapping) {
        const known = [...mapping.fields, ...COMMON];
        for (const field of Object.keys(raw)) {
          if (!known.includes(field))
            issue(
              field,
              `${type}: "${field}" is not supported by gpualert (it would be ignored, so it is refused; see "Coming from Alertmanager" in the README)`,
            );
        }
      }
      for (const field of ['send_resolved'] as const) if (raw[field] !== undefined && typeof raw[field] !== 'boolean') issue(field, 'expected true or false');
      for (const field of ['per_minute', 'per_second'] as const)
        if (raw[field] !== undefined && !(typeof raw[field] === 'number' && raw[field] > 0)) issue(field, 'expected a positive number');
      const templates = templateFields(descriptor, raw, at, issue);
      // A mapped integration's fields become our settings; gpualert's own `<channel>_configs` holds them as they are.
      const settingsRaw: Raw = mapping ? mapping.settings(raw, global, issue) : Object.fromEntries(Object.entries(raw).filter(([k]) => !COMMON.includes(k)));
      const checked = descriptor.settings.atLoad.safeParse(settingsRaw);
      if (!checked.success) for (const problem of checked.error.issues) issue(fieldOf(mapping, String(problem.path[0] ?? '')), problem.message);
      out.push({
        name: total === 1 ? name : `${name}/${type}/${i}`,
        channel: descriptor.name,
        settings: scalars(settingsRaw),
        send_resolved: typeof raw.send_resolved === 'boolean' ? raw.send_resolved : mapping ? mapping.sendResolved : true,
        ...(Object.keys(templates).length > 0 ? { templates } : {}),
        ...(typeof raw.per_minute === 'number' ? { per_minute: raw.per_minute } : {}),
        ...(typeof raw.per_second === 'number' ? { per_second: raw.per_second } : {}),
      });
    });
  }
  return out;
}

/**
 * The integration's Go-template fields (its descriptor's `alertmanager.templates`), with their
 * paths. `subject` is written as `headers.Subject` (email's), and `headers` may hold only Subject: the rest would be ignored.
 */
function templateFields(descriptor: ChannelDescriptor, raw: RawIntegration, at: (string | number)[], issue: FieldIssue): Record<string, TemplateField> {
  const out = Object.create(null) as Record<string, TemplateField>;
  const fields = descriptor.alertmanager?.templates ?? [];
  for (const field of fields) {
    const source = raw[field];
    if (field === 'subject' || source === undefined) continue;
    if (typeof source !== 'string') issue(field, 'expected a template (a string)');
    else out[field] = { source, path: [...at, field] };
  }
  if (fields.includes('subject') && raw.headers !== undefined) {
    if (!isMapping(raw.headers)) issue('headers', 'expected a mapping of header names to templates');
    else {
      for (const [name, value] of Object.entries(raw.headers)) {
        if (name.toLowerCase() !== 'subject')
          issue(`headers.${name}`, `${descriptor.name} header "${name}" is not supported by gpualert (only Subject; it would be ignored, so it is refused)`);
        else if (typeof value !== 'string') issue(`headers.${name}`, 'expected a template (a string)');
        else out.subject = { source: value, path: [...at, 'headers', name] };
      }
    }
  }
  return out;
}

/** Our setting's name back to the Alertmanager field it came from, for the error's path. */
function fieldOf(mapping: ChannelDescriptor['alertmanager'], setting: string): string {
  const back = mapping?.fieldOf;
  return (back && Object.hasOwn(back, setting) ? back[setting] : undefined) ?? setting;
}
