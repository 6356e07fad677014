import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { layerViolations, LAYERS, workspaceImports, type WorkspaceImports } from '../tools/layers.ts';

const ROOT = resolve(import.meta.dirname, '..');

function workspace(runtime: Record<string, string>, typeOnly: Record<string, string> = {}): WorkspaceImports {
  return { dir: 'x', runtime: new Map(Object.entries(runtime)), typeOnly: new Map(Object.entries(typeOnly)) };
}

describe('the layering, from schema up to the CLI', () => {
  it('sees an import against it: a core package running an adapter, a package importing a service, two services, a workspace with no layer', () => {
    const problems = layerViolations(
      new Map([
        ['@gpualert/engine', workspace({ '@gpualert/state': 'packages/engine/src/a.ts' }, { '@gpualert/bus': 'packages/engine/src/b.ts' })],
        ['@gpualert/bus', workspace({ '@gpualert/notifier': 'packages/bus/src/c.ts' })],
        ['@gpualert/intake', workspace({ '@gpualert/notifier': 'services/intake/src/d.ts' })],
        ['@gpualert/new-thing', workspace({})],
        ['@gpualert/cli', workspace({ '@gpualert/notifier': 'packages/cli/src/e.ts' })],
      ]),
    );
    expect(problems).toEqual([
      '@gpualert/new-thing has no layer in tools/layers.ts',
      'packages/bus/src/c.ts: @gpualert/bus (adapter) imports @gpualert/notifier (service)',
      'packages/engine/src/a.ts: @gpualert/engine (core) imports @gpualert/state (adapter)',
      'services/intake/src/d.ts: @gpualert/intake (service) imports @gpualert/notifier (service)',
    ]);
  });

  it("holds in gpualert's own source: every workspace has a layer and imports only below it", () => {
    const imports = workspaceImports(ROOT);
    expect(imports.size).toBeGreaterThanOrEqual(LAYERS.size - 1);
    // The imports are read: the CLI puts the services together, the engine builds on the rules.
    expect([...(imports.get('@gpualert/cli')?.runtime.keys() ?? [])]).toContain('@gpualert/notifier');
    expect([...(imports.get('@gpualert/engine')?.runtime.keys() ?? [])]).toContain('@gpualert/rules');
    expect(layerViolations(imports)).toEqual([]);
  });
});
