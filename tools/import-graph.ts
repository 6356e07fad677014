import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { manifestEntries } from './manifest-entries.ts';

/**
 * The import graph of the project's source (packages/ and services/, tests aside): every file's
 * imports and re-exports, type-only ones included, resolved to files (a relative path, or an
 * `@gpualert/*` package to its entry). `circles` finds the import circles in it (issue 30: none);
 * `testImports` the production files that import test code (none).
 */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

const SOURCE_ROOTS = ['packages', 'services'];

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'fixtures') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** Each workspace package's entries (its name, and `name/sub` for each subpath `exports` names) and the file each points at. */
function packageEntries(root: string): Map<string, string> {
  const entries = new Map<string, string>();
  for (const top of SOURCE_ROOTS) {
    for (const dir of readdirSync(join(root, top))) {
      const manifest = join(root, top, dir, 'package.json');
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; exports?: unknown; main?: string };
      for (const [specifier, entry] of manifestEntries(pkg)) entries.set(specifier, resolve(root, top, dir, entry));
    }
  }
  return entries;
}

/** The project's import graph, file paths relative to `root`. */
export function importGraph(root: string): ImportGraph {
  const entries = packageEntries(root);
  const graph = new Map<string, string[]>();
  for (const top of SOURCE_ROOTS) {
    for (const file of sourceFiles(join(root, top))) {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, false);
      const targets = importedFiles.flatMap(({ fileName }) => {
        const target = fileName.startsWith('.') ? resolve(dirname(file), fileName) : entries.get(fileName);
        return target && existsSync(target) ? [relative(root, target)] : [];
      });
      graph.set(relative(root, file), [...new Set(targets)]);
    }
  }
  return graph;
}

/** Every import circle (a strongly connected set of two or more files, or a file importing itself), each sorted. */
export function circles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const members: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      members.push(member);
    } while (member !== file);
    if (members.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(members.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** Where test code lives: the conformance suites and shared test data, and the cross-service tests. */
export const TEST_CODE = ['packages/test-support/', 'test/'];

/** Each production file (any file of the graph outside TEST_CODE) that imports test code, with the file it imports. */
export function testImports(graph: ImportGraph): [from: string, to: string][] {
  const isTestCode = (file: string) => TEST_CODE.some((dir) => file.startsWith(dir));
  return [...graph].flatMap(([file, targets]) => (isTestCode(file) ? [] : targets.filter(isTestCode).map((target): [string, string] => [file, target])));
}
