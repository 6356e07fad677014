/**
 * `npm pack` of this checkout into `destination`, one at a time: its prepack (`npm run build`)
 * deletes and rewrites dist/, so two packs at once (the package test and the image build run in
 * parallel) would each pack the other's half-written bundle. A lock folder beside dist/ (made
 * atomically by mkdir) serialises them; a lock older than the longest pack is a crashed run's and
 * is taken over.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const LOCK = join(ROOT, '.pack.lock');
const STALE_MS = 5 * 60_000;
const WAIT_MS = 10 * 60_000;

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function lock(): void {
  const until = Date.now() + WAIT_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    try {
      if (Date.now() - statSync(LOCK).mtimeMs > STALE_MS) rmSync(LOCK, { recursive: true, force: true });
    } catch {
      // released meanwhile
    }
    if (Date.now() > until) throw new Error(`${LOCK} held for over ${WAIT_MS / 60_000} min: another npm pack of this checkout is stuck`);
    sleep(250);
  }
}

/** The path of the tarball `npm pack` wrote into `destination`. */
export function packCheckout(destination: string): string {
  lock();
  try {
    execFileSync('npm', ['pack', '--silent', '--pack-destination', destination], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
  const tarball = readdirSync(destination).find((f) => f.endsWith('.tgz'));
  if (tarball === undefined) throw new Error(`npm pack left no tarball in ${destination}`);
  return join(destination, tarball);
}
