import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RoutesFile } from '../route-config.ts';
import { ALL_CHANNELS, CHANNELS } from './all-channels.ts';
import type { ChannelDescriptor } from './channel-descriptor.ts';
import { createChannel } from './registry.ts';

const SUFFIX = '.descriptor.ts';
const files = readdirSync(import.meta.dirname)
  .filter((f) => f.endsWith(SUFFIX))
  .sort();

function isDescriptor(value: unknown): value is ChannelDescriptor {
  return typeof value === 'object' && value !== null && 'name' in value && 'create' in value && 'settings' in value;
}

describe('the list of channels (all-channels.ts)', () => {
  it('registers every descriptor file once, and nothing else', async () => {
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const exported = Object.values((await import(`./${file}`)) as Record<string, unknown>).filter(isDescriptor);
      expect(exported, `${file} exports one descriptor`).toHaveLength(1);
      const [descriptor] = exported;
      expect(descriptor?.name, `${file} is named after its channel`).toBe(file.slice(0, -SUFFIX.length));
      expect(
        ALL_CHANNELS.filter((d) => d === descriptor),
        `${file} is in ALL_CHANNELS once`,
      ).toHaveLength(1);
    }
    expect(ALL_CHANNELS).toHaveLength(files.length);
    expect(new Set(CHANNELS).size).toBe(CHANNELS.length);
  });

  it('gives each Alertmanager integration its own key, none taken by a channel of another name', () => {
    const keys = ALL_CHANNELS.map((d) => d.alertmanager?.key ?? `${d.name}_configs`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe.each(ALL_CHANNELS.flatMap((d) => (d.alertmanager ? [{ name: d.name, integration: d.alertmanager }] : [])))(
  "$name's Alertmanager $integration.key",
  ({ name, integration }) => {
    it('documents every field it takes in its examples, and templates only fields it takes', () => {
      const used = new Set(integration.examples.flatMap((example) => Object.keys(example)));
      expect(
        [...integration.fields].filter((field) => !used.has(field)),
        'fields no example uses',
      ).toEqual([]);
      expect(
        integration.templates.filter((field) => !integration.fields.includes(field) && !(field === 'subject' && integration.fields.includes('headers'))),
      ).toEqual([]);
    });

    it.each(integration.examples.map((example, i) => ({ i, example })))('loads example $i as a receiver and builds its channel', ({ example }) => {
      const parsed = RoutesFile.safeParse({ receivers: [{ name: 'team', [integration.key]: [example] }], route: { receiver: 'team' } });
      expect(parsed.error?.issues ?? []).toEqual([]);
      const [receiver] = parsed.data?.receivers ?? [];
      expect(receiver?.channel).toBe(name);
      expect(receiver?.send_resolved).toBe(integration.sendResolved);
      // Secrets written as env:NAME are read at start: any value does here.
      const env = new Proxy({}, { get: (_, key) => (typeof key === 'string' ? `value-of-${key}` : undefined) });
      if (receiver) expect(createChannel(receiver, env).name).toBe(name);
    });
  },
);
