import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Debian's own builds of the real clients the Alertmanager tests talk to: `prometheus` (2.42) and
 * `prometheus-alertmanager` (0.25, with amtool). Fetched with `apt-get download` and unpacked with
 * `dpkg -x` into the cache, keyed by the package's version; nothing is installed on the system and
 * no root is needed. Called by tools/provision.ts before the tests, and by the tests to find them.
 */
export const DEBIAN_TOOLS = [
  { pkg: 'prometheus', binary: 'prometheus' },
  { pkg: 'prometheus-alertmanager', binary: 'prometheus-alertmanager' },
  { pkg: 'prometheus-alertmanager', binary: 'amtool' },
] as const;

const cacheRoot = () => join(process.env.GPUALERT_CACHE ?? join(homedir(), '.cache', 'gpualert'), 'debian');

function run(command: string, args: readonly string[], cwd?: string): { ok: boolean; out: string } {
  const r = spawnSync(command, args, { encoding: 'utf8', cwd, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: ['ignore', 'pipe', 'pipe'] });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** The candidate version apt would fetch (`apt-cache policy`), or undefined when apt does not know the package. */
function candidate(pkg: string): string | undefined {
  const policy = run('apt-cache', ['policy', pkg]);
  const version = /Candidate:\s*(\S+)/.exec(policy.out)?.[1];
  return version && version !== '(none)' ? version : undefined;
}

/** An unpacked package already in the cache (any version): the tests never need the network once it is there. */
function cached(pkg: string): string | undefined {
  const root = cacheRoot();
  if (!existsSync(root)) return undefined;
  const dirs = readdirSync(root)
    .filter((d) => d.startsWith(`${pkg}-`) && /^\d/.test(d.slice(pkg.length + 1)))
    .sort();
  return dirs.length > 0 ? join(root, dirs[dirs.length - 1]!) : undefined;
}

/** Where `binary` of Debian's `pkg` lies, fetching and unpacking the package once; throws one line saying what failed. */
export function debianTool(pkg: string, binary: string): string {
  let dir = cached(pkg);
  if (!dir) {
    let version = candidate(pkg);
    if (!version) {
      run('apt-get', ['update', '-qq']);
      version = candidate(pkg);
    }
    if (!version) throw new Error(`apt does not know the Debian package ${pkg} (is this Debian or Ubuntu, with its main archive?)`);
    mkdirSync(cacheRoot(), { recursive: true });
    const work = mkdtempSync(join(cacheRoot(), `.${pkg}-`));
    try {
      let fetched = run('apt-get', ['download', `${pkg}=${version}`], work);
      if (!fetched.ok) {
        run('apt-get', ['update', '-qq']);
        fetched = run('apt-get', ['download', `${pkg}=${version}`], work);
      }
      const deb = readdirSync(work).find((f) => f.endsWith('.deb'));
      if (!fetched.ok || !deb) throw new Error(`apt-get download ${pkg}=${version} failed: ${fetched.out.trim().split('\n').pop() ?? ''}`);
      const unpacked = run('dpkg', ['-x', deb, 'root'], work);
      if (!unpacked.ok) throw new Error(`dpkg -x ${deb} failed: ${unpacked.out.trim().split('\n').pop() ?? ''}`);
      dir = join(cacheRoot(), `${pkg}-${version.replace(/[^\w.+-]/g, '_')}`);
      // Renamed into place whole: a run stopped halfway leaves a dot-folder, never a half cache.
      renameSync(join(work, 'root'), dir);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const path = join(dir, 'usr', 'bin', binary);
  if (!existsSync(path)) throw new Error(`${pkg} in ${dir} has no usr/bin/${binary}`);
  return path;
}

/** Where Debian's build looks for its templates and UI: fixed at build time, outside the cache. */
const DEBIAN_SHARE = Buffer.from('/usr/share/prometheus/alertmanager');
/** The same length, relative: the copy finds its templates under the folder it is started in. */
const RELATIVE_SHARE = Buffer.from('usr/share/prometheus//alertmanager');

/**
 * Debian's Alertmanager reads its default templates from /usr/share/prometheus/alertmanager, which
 * only a system install provides. A copy with that path rewritten (same length, so Go's string
 * headers still hold) to a relative one, started in the unpacked package's root, finds them there.
 */
export function relocatedAlertmanager(): { binary: string; cwd: string } {
  const original = debianTool('prometheus-alertmanager', 'prometheus-alertmanager');
  const cwd = join(original, '..', '..', '..');
  const binary = `${original}.relocated`;
  if (!existsSync(binary)) {
    const bytes = readFileSync(original);
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = bytes.indexOf(DEBIAN_SHARE); at >= 0; at = bytes.indexOf(DEBIAN_SHARE, from)) {
      parts.push(bytes.subarray(from, at), RELATIVE_SHARE);
      from = at + DEBIAN_SHARE.length;
    }
    parts.push(bytes.subarray(from));
    writeFileSync(`${binary}.tmp`, Buffer.concat(parts), { mode: 0o755 });
    renameSync(`${binary}.tmp`, binary);
  }
  return { binary, cwd };
}
