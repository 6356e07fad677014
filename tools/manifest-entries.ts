/**
 * A workspace package's entries from its package.json: `[specifier, file]` for the package's name
 * and for each subpath its `exports` map names (`"./redis"` → `@gpualert/state/redis`), the file
 * relative to the package. Without `exports`, `main` or `./src/index.ts`.
 */
export function manifestEntries(manifest: { name: string; exports?: unknown; main?: string }): [string, string][] {
  const { exports } = manifest;
  if (typeof exports === 'string') return [[manifest.name, exports]];
  if (exports && typeof exports === 'object') {
    return Object.entries(exports as Record<string, unknown>).map(([subpath, file]) => {
      // A conditional entry ({ import, require }) would be left out of the checks that read these: refused instead.
      if (typeof file !== 'string') throw new Error(`${manifest.name}: exports["${subpath}"] is not a file path; only plain subpath exports are read`);
      return [subpath === '.' ? manifest.name : `${manifest.name}/${subpath.replace(/^\.\//, '')}`, file];
    });
  }
  return [[manifest.name, manifest.main ?? './src/index.ts']];
}
