import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

/**
 * Where the engine's memory goes at 1,000 GPUs (issue 34, item 4), without Kafka or Redis: a child
 * process (engine-footprint-probe.ts) loads what `gpualert engine` loads, part by part, holds the
 * service's state for 125 hosts × 8 GPUs after 320 scrapes each (as `e2e --quick` feeds it), and
 * lets go of the parts one by one. Run twice: under tsx, as a checkout (and the e2e bench) runs
 * `gpualert engine`, and bundled by esbuild as `npm run build` bundles an installed gpualert.
 * GPUALERT_BENCH_HOSTS and GPUALERT_BENCH_SCRAPES change the fleet.
 */
const ROOT = resolve(import.meta.dirname, '..');
const PROBE = join(ROOT, 'bench/engine-footprint-probe.ts');
/** Inside node_modules, so the bundle finds the npm dependencies it leaves out, and ignored by git. */
const BUNDLE_DIR = join(ROOT, 'node_modules/.cache/gpualert-engine-footprint');

interface Step {
  step: string;
  rss: number;
  rssAnon: number;
  rssFile: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  code: number;
  hosts?: number;
  gpus?: number;
  samples?: number;
  savedChars?: number;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const signed = (bytes: number) => `${bytes >= 0 ? '+' : ''}${mb(bytes)}`;

function run(label: string, args: string[]): Step[] {
  const out = execFileSync(process.execPath, ['--expose-gc', ...args], { cwd: ROOT, env: process.env, encoding: 'utf8', maxBuffer: 16 * 2 ** 20 });
  const steps = out
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Step);
  console.log(`\n### ${label}`);
  console.log(
    `${'after (each after a full GC)'.padEnd(56)} ${'RSS'.padStart(7)} ${'heap used'.padStart(10)} ${'Δ heap'.padStart(7)} ${'heap total'.padStart(10)} ${'external'.padStart(9)} ${'(array buffers)'.padStart(15)}`,
  );
  steps.forEach((s, i) => {
    const before = steps[i - 1];
    console.log(
      `${s.step.padEnd(56)} ${mb(s.rss).padStart(7)} ${mb(s.heapUsed).padStart(10)} ${(before ? signed(s.heapUsed - before.heapUsed) : '').padStart(7)} ${mb(s.heapTotal).padStart(10)} ${mb(s.external).padStart(9)} ${mb(s.arrayBuffers).padStart(15)}`,
    );
  });
  return steps;
}

function at(steps: Step[], name: string): Step {
  const found = steps.find((s) => s.step === name);
  if (!found) throw new Error(`engine-footprint bench: the probe did not reach "${name}"`);
  return found;
}

/** The parts, from one run's steps: what each release freed, and what loading each left. */
function summary(label: string, steps: Step[]): Record<string, number | string> {
  const judged = at(steps, 'fleet judged');
  const heap = (from: string, to: string) => at(steps, from).heapUsed - at(steps, to).heapUsed;
  const buffers = (from: string, to: string) => at(steps, from).arrayBuffers - at(steps, to).arrayBuffers;
  const released = {
    rings: 'released: fleet view (history rings, latest samples)',
    samples: 'released: metrics latest samples',
    hosts: 'released: per-host state (baselines, trackers)',
  };
  const parts = {
    mode: label,
    gpus: judged.gpus ?? 0,
    rss_judged_mb: Number(mb(judged.rss)),
    rss_after_mb: Number(mb(at(steps, released.hosts).rss)),
    rss_anon_judged_mb: Number(mb(judged.rssAnon)),
    rss_file_judged_mb: Number(mb(judged.rssFile)),
    heap_used_mb: Number(mb(judged.heapUsed)),
    heap_total_mb: Number(mb(judged.heapTotal)),
    node_rss_mb: Number(mb(at(steps, 'node').rss)),
    npm_dependencies_heap_mb: Number(mb(heap('import commander', 'node'))),
    workspace_code_heap_mb: Number(mb(heap('import the engine command', 'import commander'))),
    rules_heap_mb: Number(mb(heap('rules, catalog and prices loaded', 'import the engine command'))),
    fleet_view_heap_mb: Number(mb(heap('after a /v1/fleet snapshot and a /metrics render', released.rings))),
    fleet_view_buffers_mb: Number(mb(buffers('after a /v1/fleet snapshot and a /metrics render', released.rings))),
    latest_samples_heap_mb: Number(mb(heap(released.rings, released.samples))),
    host_state_heap_mb: Number(mb(heap(released.samples, released.hosts))),
    host_state_json_chars: judged.savedChars ?? 0,
  };
  return parts;
}

export async function benchEngineFootprint(): Promise<void> {
  console.log('\n## Engine footprint: what `gpualert engine` holds at 125 hosts × 8 GPUs, by part (no Kafka, no Redis)');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  await build({
    entryPoints: [PROBE],
    outdir: BUNDLE_DIR,
    entryNames: 'probe',
    outExtension: { '.js': '.mjs' },
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    external: [...Object.keys(pkg.dependencies), 'fast-check'],
    logLevel: 'warning',
  });
  const tsx = summary('tsx', run('under tsx (a checkout, as the e2e bench runs it)', ['--import', 'tsx', PROBE]));
  const bundled = summary('bundled', run('bundled (as `npm run build` installs it)', [join(BUNDLE_DIR, 'probe.mjs')]));
  const small = summary(
    'bundled, --max-semi-space-size=2',
    run('bundled, V8 young generation capped (--max-semi-space-size=2)', ['--max-semi-space-size=2', join(BUNDLE_DIR, 'probe.mjs')]),
  );
  console.log('');
  for (const s of [tsx, bundled, small])
    console.log(
      `${`${s.mode}: RSS judged / settled, heap used / total`.padEnd(56)} ${s.rss_judged_mb} / ${s.rss_after_mb} MB, ${s.heap_used_mb} / ${s.heap_total_mb} MB (node alone ${s.node_rss_mb} MB; judged: ${s.rss_anon_judged_mb} MB anonymous, ${s.rss_file_judged_mb} MB of mapped files)`,
    );
  console.log(
    `${'heap by part (bundled)'.padEnd(56)} npm deps ${bundled.npm_dependencies_heap_mb}, workspace code ${bundled.workspace_code_heap_mb}, rules ${bundled.rules_heap_mb}, fleet view ${bundled.fleet_view_heap_mb} + ${bundled.fleet_view_buffers_mb} buffers, latest samples ${bundled.latest_samples_heap_mb}, host state ${bundled.host_state_heap_mb} MB`,
  );
  console.log(JSON.stringify({ bench: 'engine-footprint', runs: [tsx, bundled, small] }));
}
