import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The console's browser files, shipped in the package (no CDN at run time): plain ES modules,
 * one stylesheet, one page. Only the names listed here are served: a path is never joined onto
 * the folder, so `../` or an encoded slash reaches nothing.
 */
export const CONSOLE_ASSETS: ReadonlyMap<string, string> = new Map([
  ['index.html', 'text/html; charset=utf-8'],
  ['console.css', 'text/css; charset=utf-8'],
  ['app.js', 'text/javascript; charset=utf-8'],
  ['api.js', 'text/javascript; charset=utf-8'],
  ['dom.js', 'text/javascript; charset=utf-8'],
  ['fleet-grid.js', 'text/javascript; charset=utf-8'],
  ['gpu-page.js', 'text/javascript; charset=utf-8'],
  ['alerts-page.js', 'text/javascript; charset=utf-8'],
  ['silences-page.js', 'text/javascript; charset=utf-8'],
  ['maintenance-page.js', 'text/javascript; charset=utf-8'],
  ['actions-page.js', 'text/javascript; charset=utf-8'],
]);

/** Where the assets sit from the package root: a checkout and an installed package (package.json "files") alike. */
export const CONSOLE_ASSETS_PATH = 'services/notifier/src/console/assets';

let folder: string | undefined;

/** The assets folder: beside this module in a checkout, or under the package root when it runs built from `dist/`. */
export function consoleAssetsFolder(): string {
  if (folder !== undefined) return folder;
  let dir = dirname(fileURLToPath(import.meta.url));
  if (existsSync(join(dir, 'assets', 'index.html'))) return (folder = join(dir, 'assets'));
  for (let depth = 0; depth < 8; depth += 1) {
    const candidate = join(dir, CONSOLE_ASSETS_PATH);
    if (existsSync(join(candidate, 'index.html'))) return (folder = candidate);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`the console's assets (${CONSOLE_ASSETS_PATH}) were not found above ${fileURLToPath(import.meta.url)}`);
}

const loaded = new Map<string, string>();

/** One asset's bytes and type, read once; undefined for any name not on the list. */
export function consoleAsset(name: string): { body: string; type: string } | undefined {
  const type = CONSOLE_ASSETS.get(name);
  if (type === undefined) return undefined;
  let body = loaded.get(name);
  if (!body) loaded.set(name, (body = readFileSync(join(consoleAssetsFolder(), name), 'utf8')));
  return { body, type };
}
