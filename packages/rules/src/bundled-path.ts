import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isSea } from 'node:sea';
import { fileURLToPath } from 'node:url';
import { unpackSeaFiles } from './sea-files.ts';

let root: string | undefined;

/**
 * The folder gpualert's bundled files (`rules/`, `demo/`) live in: the repository root in a
 * checkout (this file is `packages/rules/src/`), the package root when it runs built from
 * `dist/`. Found by looking up from this module, so both layouts work without configuration. In
 * gpualert's single executable (tools/build-sea.ts), the folder its assets are unpacked to.
 */
export function bundledRoot(): string {
  if (root !== undefined) return root;
  if (isSea()) return (root = unpackSeaFiles());
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 8; depth += 1) {
    if (existsSync(join(dir, 'rules', 'xid-catalog.yaml'))) return (root = dir);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`gpualert's bundled rules/ not found above ${fileURLToPath(import.meta.url)}`);
}

/** A bundled file by its path from the package root, e.g. `rules/routes.yaml`. */
export function bundledPath(relative: string): string {
  return join(bundledRoot(), relative);
}
