import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * The layers gpualert's workspaces sit in, bottom up. A workspace imports only from layers below
 * its own, or from its own layer where that layer allows it: the foundation, the core and the
 * adapters may build on each other within their layer; a service never imports another service;
 * the CLI is the one place that puts services together. The core (judging, routing, parsing,
 * the timeline) never imports an adapter (Kafka, Redis, the process runtime) to run: it may name
 * an adapter's interface in a type-only import, which leaves nothing at run time.
 */
export const LAYER_ORDER = ['foundation', 'core', 'adapter', 'service', 'cli'] as const;
export type Layer = (typeof LAYER_ORDER)[number];

const WITHIN_LAYER: ReadonlySet<Layer> = new Set<Layer>(['foundation', 'core', 'adapter']);

/** Each workspace's layer; a workspace missing here fails the test that checks the layering. */
export const LAYERS: ReadonlyMap<string, Layer> = new Map<string, Layer>([
  ['@gpualert/schema', 'foundation'],
  ['@gpualert/log', 'foundation'],
  ['@gpualert/config', 'core'],
  ['@gpualert/rules', 'core'],
  ['@gpualert/gpu-metrics', 'core'],
  ['@gpualert/kernel-log', 'core'],
  ['@gpualert/providers', 'core'],
  ['@gpualert/engine', 'core'],
  ['@gpualert/notify', 'core'],
  ['@gpualert/timeline', 'core'],
  ['@gpualert/remediation', 'core'],
  ['@gpualert/bus', 'adapter'],
  ['@gpualert/state', 'adapter'],
  ['@gpualert/runtime', 'adapter'],
  ['@gpualert/executors', 'adapter'],
  ['@gpualert/collectors', 'service'],
  ['@gpualert/engine-service', 'service'],
  ['@gpualert/intake', 'service'],
  ['@gpualert/notifier', 'service'],
  ['@gpualert/usage', 'service'],
  ['@gpualert/remediator', 'service'],
  ['@gpualert/cli', 'cli'],
  // Test code (conformance suites, synthetic fleets): above everything, imported by no production
  // workspace (test/import-graph.test.ts fails on one that does).
  ['@gpualert/test-support', 'cli'],
]);

/** One workspace's imports of other workspaces: those that run, and those only for types. */
export interface WorkspaceImports {
  readonly dir: string;
  readonly runtime: ReadonlyMap<string, string>;
  readonly typeOnly: ReadonlyMap<string, string>;
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'fixtures') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function isTypeOnly(statement: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(statement)) {
    return (
      statement.isTypeOnly ||
      (statement.exportClause !== undefined && ts.isNamedExports(statement.exportClause) && statement.exportClause.elements.every((e) => e.isTypeOnly))
    );
  }
  const clause = statement.importClause;
  if (!clause) return false; // `import 'x'` runs x
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    clause.name === undefined &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  );
}

/** Every workspace's `@gpualert/*` imports in its production source (tests aside), keyed by workspace name; each import with a file that makes it. */
export function workspaceImports(root: string): Map<string, WorkspaceImports> {
  const out = new Map<string, WorkspaceImports>();
  for (const top of ['packages', 'services']) {
    for (const dir of readdirSync(join(root, top))) {
      const manifest = join(root, top, dir, 'package.json');
      if (!existsSync(manifest)) continue;
      const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string };
      const runtime = new Map<string, string>();
      const typeOnly = new Map<string, string>();
      for (const file of sourceFiles(join(root, top, dir, 'src'))) {
        const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
        for (const statement of source.statements) {
          if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
          const specifier = statement.moduleSpecifier;
          if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('@gpualert/')) continue;
          const target = specifier.text.split('/').slice(0, 2).join('/');
          if (target === name) continue;
          const where = file.slice(root.length + 1);
          if (isTypeOnly(statement)) {
            if (!typeOnly.has(target)) typeOnly.set(target, where);
          } else if (!runtime.has(target)) runtime.set(target, where);
        }
      }
      out.set(name, { dir: `${top}/${dir}`, runtime, typeOnly });
    }
  }
  return out;
}

/** Each import that goes against the layering, as one line naming the file that makes it. */
export function layerViolations(imports: ReadonlyMap<string, WorkspaceImports>, layers: ReadonlyMap<string, Layer> = LAYERS): string[] {
  const rank = (layer: Layer) => LAYER_ORDER.indexOf(layer);
  const problems: string[] = [];
  for (const [name, { runtime, typeOnly }] of imports) {
    const own = layers.get(name);
    if (!own) {
      problems.push(`${name} has no layer in tools/layers.ts`);
      continue;
    }
    const check = (target: string, where: string, types: boolean) => {
      const theirs = layers.get(target);
      if (!theirs) return problems.push(`${where} imports ${target}, which has no layer in tools/layers.ts`);
      const up = rank(theirs) > rank(own);
      const sideways = theirs === own && !WITHIN_LAYER.has(own);
      // The core may name an adapter's interface (a Bus, a StateStore) in types: nothing of the adapter runs.
      const coreNamingAdapter = types && own === 'core' && theirs === 'adapter';
      if ((up && !coreNamingAdapter) || sideways) problems.push(`${where}: ${name} (${own}) imports ${target} (${theirs})`);
      return undefined;
    };
    for (const [target, where] of runtime) check(target, where, false);
    for (const [target, where] of typeOnly) check(target, where, true);
  }
  return problems.sort();
}
