import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { manifestEntries } from './manifest-entries.ts';

/**
 * Each workspace package's surface (issue 30): the names its entry exports, against the names the
 * rest of the repository (packages, services, tools, bench, test) imports from it by its package
 * name. An entry lists its exports (`export { A, type B } from './a.ts'`); `export *` hides what
 * a package offers and is reported.
 */
export interface PackageSurface {
  readonly name: string;
  readonly entry: string;
  readonly exported: readonly string[];
  /** `export * from …` statements in the entry, by module. */
  readonly exportStars: readonly string[];
  /** Exported and imported by nothing outside the package. */
  readonly unused: readonly string[];
}

const IMPORTERS = ['packages', 'services', 'tools', 'bench', 'test'];

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|mts|mjs)$/.test(path) && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The names each `@gpualert/*` specifier is imported under, per importing file: static imports, re-exports and destructured `await import(…)`. */
export function importedNames(root: string): Map<string, Map<string, string[]>> {
  const found = new Map<string, Map<string, string[]>>();
  const add = (specifier: string, name: string, file: string) => {
    const byName = found.get(specifier) ?? new Map<string, string[]>();
    found.set(specifier, byName);
    byName.set(name, [...(byName.get(name) ?? []), file]);
  };
  for (const top of IMPORTERS) {
    if (!existsSync(join(root, top))) continue;
    for (const path of sourceFiles(join(root, top))) {
      const file = relative(root, path);
      const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
          const specifier = node.moduleSpecifier.text;
          const bindings = ts.isImportDeclaration(node) ? node.importClause?.namedBindings : node.exportClause;
          if (ts.isImportDeclaration(node) && node.importClause?.name) add(specifier, 'default', file);
          if (bindings && (ts.isNamedImports(bindings) || ts.isNamedExports(bindings))) {
            for (const element of bindings.elements) add(specifier, (element.propertyName ?? element.name).text, file);
          } else if (bindings || (ts.isExportDeclaration(node) && !node.exportClause)) add(specifier, '*', file);
        }
        if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
          const [argument] = node.arguments;
          if (argument && ts.isStringLiteral(argument)) {
            let parent: ts.Node = node.parent;
            while (ts.isAwaitExpression(parent) || ts.isParenthesizedExpression(parent)) parent = parent.parent;
            if (ts.isVariableDeclaration(parent) && ts.isObjectBindingPattern(parent.name)) {
              for (const element of parent.name.elements) {
                const key = element.propertyName ?? element.name;
                if (ts.isIdentifier(key)) add(argument.text, key.text, file);
              }
            } else if (ts.isPropertyAccessExpression(parent)) add(argument.text, parent.name.text, file);
            else add(argument.text, '*', file);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  return found;
}

/** The names an entry file lists in its `export { … } from` statements, and the modules of its `export *`. */
function entryExports(root: string, entry: string): { exported: string[]; exportStars: string[] } {
  const source = ts.createSourceFile(entry, readFileSync(join(root, entry), 'utf8'), ts.ScriptTarget.Latest, true);
  const exported: string[] = [];
  const exportStars: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue;
    const module = statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier) ? statement.moduleSpecifier.text : '';
    if (statement.exportClause && ts.isNamedExports(statement.exportClause)) exported.push(...statement.exportClause.elements.map((e) => e.name.text));
    else exportStars.push(module);
  }
  return { exported, exportStars };
}

/** Every workspace package's surface (`packages/*`, `services/*`). */
export function packageSurfaces(root: string): PackageSurface[] {
  const imported = importedNames(root);
  const surfaces: PackageSurface[] = [];
  for (const top of ['packages', 'services']) {
    for (const dir of readdirSync(join(root, top))) {
      const manifestPath = join(root, top, dir, 'package.json');
      if (!existsSync(manifestPath)) continue;
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { name: string; exports?: unknown; main?: string };
      const own = `${top}/${dir}/`;
      for (const [name, file] of manifestEntries(manifest)) {
        const entry = join(top, dir, file);
        const { exported, exportStars } = entryExports(root, entry);
        const users = imported.get(name) ?? new Map<string, string[]>();
        const usedOutside = (exportedName: string) => (users.get(exportedName) ?? []).some((importer) => !importer.startsWith(own));
        surfaces.push({ name, entry, exported, exportStars, unused: exported.filter((exportedName) => !usedOutside(exportedName)) });
      }
    }
  }
  return surfaces;
}
