/**
 * `npm run build`: the whole command line as one JavaScript file, `dist/gpualert.mjs`, so an
 * installed gpualert starts without tsx or TypeScript (start-up and memory are the agent's whole
 * budget on a GPU host). The workspace packages are bundled in; npm dependencies stay external and
 * come from the package's `dependencies`. A checkout keeps running the TypeScript directly.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

rmSync(join(ROOT, 'dist'), { recursive: true, force: true });
const started = Date.now();
const result = await build({
  entryPoints: [join(ROOT, 'packages/cli/src/bin.ts')],
  outdir: join(ROOT, 'dist'),
  entryNames: 'gpualert',
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunks/[name]-[hash]',
  // One chunk per command's code, loaded when that command runs (see main.ts's `lazy`).
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  external: Object.keys(pkg.dependencies),
  metafile: true,
  logLevel: 'warning',
});
const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
process.stderr.write(
  `dist/: ${Object.keys(result.metafile.outputs).length} files, ${(bytes / 1024).toFixed(0)} KiB with source maps, in ${Date.now() - started} ms\n`,
);
