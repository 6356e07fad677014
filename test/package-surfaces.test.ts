import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageSurfaces } from '../tools/package-surfaces.ts';

/** The command line is run through its bin.ts, not imported; its index is left as it was (issue 30). */
const NOT_IMPORTED = new Set(['@gpualert/cli']);

describe("the packages' surfaces", () => {
  const surfaces = packageSurfaces(resolve(import.meta.dirname, '..'));

  it("are read: an entry's export lists, and which of them the repository imports", () => {
    const bus = surfaces.find((s) => s.name === '@gpualert/bus')!;
    expect(bus.entry).toBe('packages/bus/src/index.ts');
    expect(bus.exported).toEqual(expect.arrayContaining(['MemoryBus', 'Bus']));
    // A subpath of the package's `exports` is a surface of its own.
    const kafka = surfaces.find((s) => s.name === '@gpualert/bus/kafka')!;
    expect(kafka).toMatchObject({ entry: 'packages/bus/src/kafka.ts', exported: ['KafkaBus'], unused: [] });
    expect(surfaces.length).toBeGreaterThan(18);
  });

  it('list their exports by name: no entry has `export *`', () => {
    expect(surfaces.flatMap((s) => s.exportStars.map((module) => `${s.entry}: export * from '${module}'`))).toEqual([]);
  });

  it('export only what another package, service, tool, bench or test imports', () => {
    expect(surfaces.filter((s) => !NOT_IMPORTED.has(s.name)).flatMap((s) => s.unused.map((name) => `${s.name}: ${name}`))).toEqual([]);
  });
});
