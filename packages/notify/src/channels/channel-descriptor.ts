import type { CompiledTemplate } from '../go-template.ts';
import type { AlertmanagerIntegration } from './alertmanager-integration.ts';
import type { Channel } from './channel.ts';
import { settingsSchema, type SettingFields, type SettingsCheck, type SettingsOf, type SettingsSchema } from './setting-fields.ts';

/** How fast one destination takes messages: at most `perSecond` in any second and `perMinute` in any minute. */
export interface RateLimit {
  readonly perSecond?: number;
  readonly perMinute?: number;
}

/** A vendor's limit on what one message may hold, which the channel cuts to (channels/truncate.ts). */
export interface SizeLimit {
  /** The part of the message: a field, the text, the whole body. */
  readonly part: string;
  readonly max: number;
  readonly unit: 'characters' | 'bytes' | 'bytes as JSON' | 'items';
}

/** An integration's Go-template fields, compiled (route-config.ts attaches them to the receiver). */
export type CompiledFields = Readonly<Record<string, CompiledTemplate>>;

/** What a channel's file declares: `defineChannel` turns it into its descriptor. */
export interface ChannelSpec<N extends string, F extends SettingFields> {
  /** The name a receiver's `channel:` gives. */
  readonly name: N;
  /** The keys of a receiver's `settings:` and what each takes. */
  readonly settings: F;
  /** A check across keys, after each key's own. */
  readonly checkSettings?: SettingsCheck;
  /** The vendor's documented rate per destination; none where it publishes none (its 429 is the limit). */
  readonly rateLimit?: RateLimit | undefined;
  readonly sizeLimits: readonly SizeLimit[];
  /** Alertmanager's `<type>_configs` that map onto this channel, if any. */
  readonly alertmanager?: AlertmanagerIntegration;
  /** A fresh channel per receiver, from its checked settings and its compiled templates. */
  readonly create: (settings: SettingsOf<F>, templates: CompiledFields | undefined) => Channel;
}

/** A channel built, or the first problem with its settings (the key and why; never the value). */
export type Created = { readonly ok: true; readonly channel: Channel } | { readonly ok: false; readonly key: string; readonly message: string };

/** All gpualert knows of one channel, in its `<name>.descriptor.ts`; channels/all-channels.ts lists them. */
export interface ChannelDescriptor<N extends string = string> {
  readonly name: N;
  readonly settings: SettingsSchema;
  readonly rateLimit: RateLimit | undefined;
  readonly sizeLimits: readonly SizeLimit[];
  readonly alertmanager: AlertmanagerIntegration | undefined;
  /** Checks resolved settings (`env:` values read) against the schema and builds a fresh channel. */
  readonly create: (resolved: Readonly<Record<string, string>>, templates?: CompiledFields) => Created;
}

export function defineChannel<const N extends string, const F extends SettingFields>(spec: ChannelSpec<N, F>): ChannelDescriptor<N> {
  const { typed, ...settings } = settingsSchema(spec.name, spec.settings, spec.checkSettings);
  return {
    name: spec.name,
    settings,
    rateLimit: spec.rateLimit,
    sizeLimits: spec.sizeLimits,
    alertmanager: spec.alertmanager,
    create: (resolved, templates) => {
      const checked = typed.safeParse(resolved);
      if (checked.success) return { ok: true, channel: spec.create(checked.data, templates) };
      const issue = checked.error.issues[0];
      return { ok: false, key: String(issue?.path[0] ?? ''), message: issue?.message ?? 'invalid settings' };
    },
  };
}
