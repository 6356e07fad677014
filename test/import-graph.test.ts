import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { circles, importGraph } from '../tools/import-graph.ts';

describe('the import graph', () => {
  it('finds a circle where there is one: two files, three files through a package, a file importing itself', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']], ['b.ts', ['a.ts', 'c.ts']], ['c.ts', []],
      ['x.ts', ['y.ts']], ['y.ts', ['z.ts']], ['z.ts', ['x.ts']],
      ['self.ts', ['self.ts']],
    ]);
    expect(circles(graph).sort()).toEqual([['a.ts', 'b.ts'], ['self.ts'], ['x.ts', 'y.ts', 'z.ts']]);
    expect(circles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', []]]))).toEqual([]);
  });

  it("of gpualert's own source has no circle (type-only imports counted, tests aside)", () => {
    const graph = importGraph(resolve(import.meta.dirname, '..'));
    expect(graph.size).toBeGreaterThan(300);
    // The graph is read: the core imports its stages, a channel its base.
    expect(graph.get('packages/notify/src/notifier-core.ts')).toContain('packages/notify/src/stages/inhibitor.ts');
    expect(graph.get('packages/notify/src/channels/webhook.ts')).toContain('packages/notify/src/channels/channel.ts');
    expect(circles(graph)).toEqual([]);
  });
});
