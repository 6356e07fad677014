import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageOf, workspaceImports } from '../tools/workspace-deps.ts';

describe("each workspace's package.json", () => {
  const workspaces = workspaceImports(resolve(import.meta.dirname, '..'));

  it('is read for every workspace, and an import is named by its package', () => {
    expect(workspaces.map((w) => w.name)).toEqual(
      expect.arrayContaining(['@gpualert/bus', '@gpualert/cli', '@gpualert/notifier', '@gpualert/test-support', '@gpualert/usage']),
    );
    expect([packageOf('zod'), packageOf('@gpualert/bus'), packageOf('yaml/dist/x.js'), packageOf('node:fs'), packageOf('fs'), packageOf('./a.ts')]).toEqual([
      'zod',
      '@gpualert/bus',
      'yaml',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('declares every package its production files import, in dependencies', () => {
    const undeclared = workspaces.flatMap((w) => [...w.undeclared].map(([name, file]) => `${w.name}: ${name} (${file})`));
    expect(undeclared).toEqual([]);
  });

  it('declares every package its tests import (a third-party one may come from the root package.json)', () => {
    expect(workspaces.flatMap((w) => [...w.undeclaredInTests].map(([name, file]) => `${w.name}: ${name} (${file})`))).toEqual([]);
  });

  it('declares nothing its source does not import', () => {
    expect(
      workspaces.flatMap((w) => [
        ...w.unusedDependencies.map((name) => `${w.name}: dependencies.${name}`),
        ...w.unusedDevDependencies.map((name) => `${w.name}: devDependencies.${name}`),
      ]),
    ).toEqual([]);
  });
});
