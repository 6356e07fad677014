/**
 * A set of Debian packages unpacked into one folder of the cache, fetched once with `apt-get
 * download` and unpacked with `dpkg -x` (nothing installed on the system, no maintainer script
 * run), as tools/provision.ts does for Prometheus and Slurm. The folder's name carries the first
 * package's version, so a new candidate is fetched anew and an old cache keeps working offline.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const cacheRoot = () => join(process.env.GPUALERT_CACHE ?? join(homedir(), '.cache', 'gpualert'), 'debian');

function run(command: string, args: readonly string[], cwd?: string): { ok: boolean; out: string } {
  const r = spawnSync(command, args, { encoding: 'utf8', cwd, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: ['ignore', 'pipe', 'pipe'] });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

const lastLine = (text: string) => text.trim().split('\n').pop() ?? '';

function candidate(pkg: string): string | undefined {
  const version = /Candidate:\s*(\S+)/.exec(run('apt-cache', ['policy', pkg]).out)?.[1];
  return version && version !== '(none)' ? version : undefined;
}

/** Where `packages` lie unpacked together (`name-VERSION/` in the cache); throws one line saying what failed. */
export function debianRoot(name: string, packages: readonly string[]): string {
  const root = cacheRoot();
  const have = existsSync(root)
    ? readdirSync(root)
        .filter((d) => d.startsWith(`${name}-`) && /^\d/.test(d.slice(name.length + 1)))
        .sort()
    : [];
  const last = have[have.length - 1];
  if (last !== undefined) return join(root, last);
  const first = packages[0]!;
  let version = candidate(first);
  if (!version) {
    run('apt-get', ['update', '-qq']);
    version = candidate(first);
  }
  if (!version) throw new Error(`apt does not know the Debian package ${first} (is this Debian or Ubuntu, with its main archive?)`);
  mkdirSync(root, { recursive: true });
  const work = mkdtempSync(join(root, `.${name}-`));
  try {
    const fetched = run('apt-get', ['download', ...packages], work);
    if (!fetched.ok) throw new Error(`apt-get download ${packages.join(' ')} failed: ${lastLine(fetched.out)}`);
    for (const deb of readdirSync(work).filter((f) => f.endsWith('.deb'))) {
      const unpacked = run('dpkg', ['-x', deb, 'root'], work);
      if (!unpacked.ok) throw new Error(`dpkg -x ${deb} failed: ${lastLine(unpacked.out)}`);
    }
    const dir = join(root, `${name}-${version.replace(/[^\w.+-]/g, '_')}`);
    renameSync(join(work, 'root'), dir); // whole: a run stopped halfway leaves a dot-folder, never a half cache
    return dir;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
