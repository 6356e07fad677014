import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * What each workspace package imports against what its package.json declares (issue 30): every
 * package a workspace's source imports is one of its dependencies, and every dependency is
 * imported. Production files answer to `dependencies` (and `peerDependencies`); test code (a
 * `*.test.ts` file, or the whole of a test-only workspace) to `devDependencies` as well, and for
 * third-party packages to the root package.json's, where the test runner and its tools are.
 */
export interface WorkspaceImports {
  readonly name: string;
  readonly dir: string;
  /** Imported by production files and not declared: package → the first file that imports it. */
  readonly undeclared: ReadonlyMap<string, string>;
  /** Imported only by test code and declared nowhere it may come from. */
  readonly undeclaredInTests: ReadonlyMap<string, string>;
  /** Declared in `dependencies` and imported by no production file. */
  readonly unusedDependencies: readonly string[];
  /** Declared in `devDependencies` and imported by no test code. */
  readonly unusedDevDependencies: readonly string[];
}

/** Workspaces whose every file is test code: they hold what tests share (packages/test-support). */
export const TEST_ONLY_WORKSPACES: ReadonlySet<string> = new Set(['@gpualert/test-support']);

interface Manifest {
  name: string;
  workspaces?: string[];
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const readManifest = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The package an import names (`zod`, `@gpualert/bus`), or undefined for a relative path or a Node built-in. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || isBuiltin(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Every workspace of the repository at `root` (its `workspaces` globs, `dir/*` only), with what its imports and manifest disagree on. */
export function workspaceImports(root: string): WorkspaceImports[] {
  const rootManifest = readManifest(root);
  const rootDeclared = new Set([...Object.keys(rootManifest.dependencies ?? {}), ...Object.keys(rootManifest.devDependencies ?? {})]);
  const dirs = (rootManifest.workspaces ?? []).flatMap((glob) => {
    const parent = glob.replace(/\/\*$/, '');
    return readdirSync(join(root, parent))
      .map((d) => `${parent}/${d}`)
      .filter((d) => existsSync(join(root, d, 'package.json')));
  });
  return dirs.map((dir) => {
    const manifest = readManifest(join(root, dir));
    const production = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
    const dev = new Set(Object.keys(manifest.devDependencies ?? {}));
    const undeclared = new Map<string, string>();
    const undeclaredInTests = new Map<string, string>();
    const usedByProduction = new Set<string>();
    const usedByTests = new Set<string>();
    const src = join(root, dir, 'src');
    for (const file of existsSync(src) ? sourceFiles(src) : []) {
      const isTest = TEST_ONLY_WORKSPACES.has(manifest.name) || file.endsWith('.test.ts');
      const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
      for (const { fileName } of importedFiles) {
        const name = packageOf(fileName);
        if (name === undefined || name === manifest.name) continue;
        const where = file.slice(root.length + 1);
        if (!isTest) {
          usedByProduction.add(name);
          if (!production.has(name) && !undeclared.has(name)) undeclared.set(name, where);
        } else {
          usedByTests.add(name);
          const fromRoot = !name.startsWith('@gpualert/') && rootDeclared.has(name);
          if (!production.has(name) && !dev.has(name) && !fromRoot && !undeclaredInTests.has(name)) undeclaredInTests.set(name, where);
        }
      }
    }
    return {
      name: manifest.name,
      dir,
      undeclared,
      undeclaredInTests,
      unusedDependencies: [...production].filter((name) => !(TEST_ONLY_WORKSPACES.has(manifest.name) ? usedByTests : usedByProduction).has(name)),
      unusedDevDependencies: [...dev].filter((name) => !usedByTests.has(name)),
    };
  });
}
