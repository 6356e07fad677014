import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { circles, importGraph, testImports } from '../tools/import-graph.ts';

describe('the import graph', () => {
  it('finds a circle where there is one: two files, three files through a package, a file importing itself', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts', 'c.ts']],
      ['c.ts', []],
      ['x.ts', ['y.ts']],
      ['y.ts', ['z.ts']],
      ['z.ts', ['x.ts']],
      ['self.ts', ['self.ts']],
    ]);
    expect(circles(graph).sort()).toEqual([['a.ts', 'b.ts'], ['self.ts'], ['x.ts', 'y.ts', 'z.ts']]);
    expect(
      circles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', []],
        ]),
      ),
    ).toEqual([]);
  });

  it("of gpualert's own source has no circle (type-only imports counted, tests aside)", () => {
    const graph = importGraph(resolve(import.meta.dirname, '..'));
    expect(graph.size).toBeGreaterThan(300);
    // The graph is read: the core imports its stages, a channel its base.
    expect(graph.get('packages/notify/src/notifier-core.ts')).toContain('packages/notify/src/stages/inhibitor.ts');
    expect(graph.get('packages/notify/src/channels/webhook.ts')).toContain('packages/notify/src/channels/channel.ts');
    expect(circles(graph)).toEqual([]);
  });

  it('finds a production file that imports test code, through the test-support package or test/', () => {
    const graph = new Map([
      ['packages/bus/src/memory-bus.ts', ['packages/test-support/src/index.ts']],
      ['services/engine/src/engine-service.ts', ['test/infra/wait-for.ts', 'packages/bus/src/memory-bus.ts']],
      ['packages/test-support/src/bus-conformance.ts', ['packages/bus/src/memory-bus.ts', 'packages/test-support/src/wait-for.ts']],
    ]);
    expect(testImports(graph)).toEqual([
      ['packages/bus/src/memory-bus.ts', 'packages/test-support/src/index.ts'],
      ['services/engine/src/engine-service.ts', 'test/infra/wait-for.ts'],
    ]);
  });

  it("of gpualert's own source: no production file imports @gpualert/test-support or test/", () => {
    const graph = importGraph(resolve(import.meta.dirname, '..'));
    // The graph holds the test-support package, and its suites import what they test.
    expect(graph.get('packages/test-support/src/bus-conformance.ts')).toContain('packages/bus/src/index.ts');
    expect(testImports(graph)).toEqual([]);
  });
});
