import { GpualertError } from '@gpualert/schema';
import type { Receiver } from '../route-config.ts';
import { descriptorOf } from './all-channels.ts';
import type { Channel } from './channel.ts';
import { isEnvRef } from './setting-fields.ts';

export class ReceiverConfigError extends GpualertError {
  constructor(message: string) {
    super('GA-RECEIVER-INVALID', message);
  }
}

/** Resolves `env:NAME` settings; a missing variable is one clear error that names it. */
export function resolveSettings(receiver: Receiver, env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, value] of Object.entries(receiver.settings)) {
    const text = String(value);
    if (isEnvRef(text)) {
      const resolved = env[text.slice(4)];
      if (resolved === undefined || resolved === '')
        throw new ReceiverConfigError(`receiver "${receiver.name}": ${key} comes from ${text.slice(4)}, which is not set`);
      out[key] = resolved;
    } else {
      out[key] = text;
    }
  }
  return out;
}

/**
 * A fresh channel per configured receiver, built by its channel's descriptor (channels/all-channels.ts)
 * from the resolved settings, checked as at load but with the environment's values in: a problem is
 * one line naming the receiver, the setting and the variable it came from, never the value.
 */
export function createChannel(receiver: Receiver, env: Readonly<Record<string, string | undefined>>): Channel {
  const created = descriptorOf(receiver.channel).create(resolveSettings(receiver, env), receiver.compiled);
  if (created.ok) return created.channel;
  const raw = Object.hasOwn(receiver.settings, created.key) ? String(receiver.settings[created.key]) : '';
  const from = isEnvRef(raw) ? ` (from ${raw.slice(4)})` : '';
  throw new ReceiverConfigError(`receiver "${receiver.name}" (${receiver.channel}): settings.${created.key}${from}: ${created.message}`);
}
