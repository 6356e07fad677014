import { describe, expect, it } from 'vitest';
import { clusterKey, SLOT_GROUPS } from './slot-groups.ts';

/** The hash tag Redis Cluster hashes: the text between the first `{` and the first `}` after it, when not empty. */
function hashTag(name: string): string | undefined {
  const open = name.indexOf('{');
  const close = open === -1 ? -1 : name.indexOf('}', open + 1);
  return close > open + 1 ? name.slice(open + 1, close) : undefined;
}

describe('names on Redis Cluster', () => {
  it("put a group's tag in front, whatever braces the prefix holds; other keys are as on one server", () => {
    for (const prefix of ['gpualert:', '', '{gp}:', 'a}b:', '{}:', 'x{:']) {
      const tags = new Set([...SLOT_GROUPS.keys()].map((key) => hashTag(clusterKey(prefix, key))));
      expect([...tags], prefix).toEqual(['notifier-state']);
      expect(clusterKey(prefix, 'engine:host:gpu-1')).toBe(`${prefix}engine:host:gpu-1`);
    }
    expect(clusterKey('gpualert:', 'notifier:groups')).toBe('{notifier-state}gpualert:notifier:groups');
    expect(clusterKey('gpualert:', 'notifier:groups', new Map())).toBe('gpualert:notifier:groups');
  });

  it("a notifier replica's own state keys share a tag of that replica's, other keys under its prefix none", () => {
    const tags = new Set([...SLOT_GROUPS.keys()].map((key) => hashTag(clusterKey('gpualert:', `notifier:replica:notifier-1:${key}`))));
    expect([...tags]).toEqual(['notifier-state:notifier-1']);
    expect(clusterKey('gpualert:', 'notifier:replica:notifier-1:cluster:since')).toBe('gpualert:notifier:replica:notifier-1:cluster:since');
    expect(clusterKey('gpualert:', 'notifier:replica:{x}:notifier:groups')).toBe('gpualert:notifier:replica:{x}:notifier:groups');
  });

  it('groups are names Redis can hash: not empty, no braces', () => {
    for (const group of SLOT_GROUPS.values()) expect(group).toMatch(/^[^{}]+$/);
  });
});
