import { readFileSync } from 'node:fs';

/**
 * A lockfile for a folder that installs gpualert's packed tarball and nothing else, made from the
 * repository's own package-lock.json: the tarball, and each package its dependencies reach with the
 * version, `resolved` and `integrity` this checkout's `npm ci` installed. With it, `npm ci
 * --offline` takes every dependency from npm's local cache by integrity and never asks a registry
 * which version a range means (a fresh clone's cache holds the tarballs `npm ci` fetched, not the
 * registry's version lists).
 */
interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  license?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  dev?: boolean;
  optional?: boolean;
  link?: boolean;
  engines?: Record<string, string>;
  bin?: Record<string, string> | string;
  os?: string[];
  cpu?: string[];
}
interface Lock {
  packages: Record<string, LockEntry>;
}

/** Where npm finds `name` from the package at `from` (a lock key): its own node_modules, then each folder above. */
function locate(packages: Lock['packages'], from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const key = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
    if (packages[key] !== undefined) return key;
    if (base === '') return undefined;
    const at = base.lastIndexOf('/node_modules/');
    base = at < 0 ? '' : base.slice(0, at);
  }
}

export function offlineLock(options: {
  repositoryLock: string;
  packageName: string;
  version: string;
  tarball: string;
  dependencies: Record<string, string>;
  /** The package's `bin`: npm links the commands from what the lock says. */
  bin: Record<string, string>;
  consumer: string;
  /** The registry the lock's tarball addresses name (the repository's lock omits them); offline, npm finds each by its integrity. */
  registry: string;
}): { packageJson: string; lock: string } {
  const repository = JSON.parse(readFileSync(options.repositoryLock, 'utf8')) as Lock;
  const spec = `file:${options.tarball}`;
  const out: Record<string, LockEntry & { name?: string }> = {
    '': { name: options.consumer, dependencies: { [options.packageName]: spec } } as LockEntry,
    [`node_modules/${options.packageName}`]: { version: options.version, resolved: spec, dependencies: options.dependencies, bin: options.bin },
  };
  // Breadth-first from the package's own dependencies; each found key keeps its place in the tree.
  const queue: [string, string][] = Object.keys(options.dependencies).map((name) => ['', name]);
  const MAX_PACKAGES = 2_000;
  while (queue.length > 0) {
    const [from, name] = queue.shift()!;
    const key = locate(repository.packages, from, name);
    if (key === undefined) throw new Error(`package-lock.json has no ${name} reachable from ${from || 'the root'}`);
    if (out[key] !== undefined) continue;
    if (Object.keys(out).length > MAX_PACKAGES) throw new Error(`more than ${MAX_PACKAGES} packages reached from ${options.packageName}`);
    const { dev: _dev, ...entry } = repository.packages[key]!;
    if (entry.link) throw new Error(`${name} is a workspace link in package-lock.json: the tarball must bundle it, not depend on it`);
    const unscoped = name.slice(name.lastIndexOf('/') + 1);
    out[key] = { ...entry, resolved: entry.resolved ?? `${options.registry.replace(/\/$/, '')}/${name}/-/${unscoped}-${entry.version}.tgz` };
    for (const dep of Object.keys(entry.dependencies ?? {})) queue.push([key, dep]);
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) if (locate(repository.packages, key, dep)) queue.push([key, dep]);
  }
  return {
    packageJson: `${JSON.stringify({ name: options.consumer, private: true, dependencies: { [options.packageName]: spec } }, null, 2)}\n`,
    lock: `${JSON.stringify({ name: options.consumer, lockfileVersion: 3, requires: true, packages: out }, null, 2)}\n`,
  };
}
