import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildImage, containerTools, runTool, type BuiltImage, type ContainerTools } from '../../tools/build-image.ts';

/**
 * The image built as `npm run build:image` builds it (Debian's buildah, no daemon, no registry:
 * tools/build-image.ts), then read back with Debian's skopeo and umoci. A container engine to run
 * it is not on these machines; as root, its programs are started in its unpacked root (chroot) as
 * its user, which is what its entrypoint and healthcheck would run.
 */
const ROOT = join(import.meta.dirname, '..', '..');
let built: BuiltImage;
let tools: ContainerTools;
let work = '';
let rootfs = '';

interface DockerConfig {
  User: string;
  Entrypoint: string[];
  Cmd: string[];
  ExposedPorts: Record<string, object>;
  Env: string[];
  Healthcheck?: { Test: string[]; Interval: number; Timeout: number; StartPeriod: number; Retries: number };
}

beforeAll(() => {
  built = buildImage();
  work = mkdtempSync(join(tmpdir(), 'gpualert-image-test-'));
  tools = containerTools(work);
  const asRoot = process.getuid?.() === 0;
  runTool(tools, 'umoci', ['unpack', ...(asRoot ? [] : ['--rootless']), '--image', `${built.ociLayout}:gpualert`, join(work, 'bundle')]);
  rootfs = join(work, 'bundle', 'rootfs');
}, 400_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The image's config blob as stored (`--raw`: skopeo would otherwise convert it to OCI's, which has no healthcheck). */
const inspect = (ref: string) => JSON.parse(runTool(tools, 'skopeo', ['inspect', '--config', '--raw', ref])) as Record<string, unknown>;

describe('the container image, built by buildah without a Docker engine', () => {
  it('runs as the numeric non-root user, with gpualert as entrypoint, the four service ports and the healthcheck (skopeo, docker-archive)', () => {
    const config = inspect(`docker-archive:${built.dockerArchive}`).config as DockerConfig;
    expect(config.User).toBe('10001:10001');
    expect(config.Entrypoint).toEqual(['gpualert']);
    expect(config.Cmd).toEqual(['--help']);
    expect(Object.keys(config.ExposedPorts).sort()).toEqual(['9095/tcp', '9468/tcp', '9469/tcp', '9470/tcp']);
    expect(config.Env).toContain('NODE_ENV=production');
    expect(config.Healthcheck).toEqual({
      Test: ['CMD', 'node', '/usr/local/lib/gpualert/healthcheck.mjs'],
      Interval: 30e9,
      Timeout: 5e9,
      StartPeriod: 30e9,
      Retries: 3,
    });
  });

  it('is built FROM its base by digest: the OCI image begins with exactly the base layers, and adds one', () => {
    expect(built.base).toMatch(/^localhost\/gpualert-base@sha256:[0-9a-f]{64}$/);
    const config = inspect(`oci:${built.ociLayout}:gpualert`);
    const layers = (config.rootfs as { diff_ids: string[] }).diff_ids;
    expect(built.baseLayers.length).toBeGreaterThan(0);
    expect(layers.slice(0, built.baseLayers.length)).toEqual(built.baseLayers);
    expect(layers).toHaveLength(built.baseLayers.length + 1);
    // The OCI config carries the same user and entrypoint (it has no field for a healthcheck).
    expect(config.config).toMatchObject({ User: '10001:10001', Entrypoint: ['gpualert'] });
  });

  it('unpacks (umoci) to a runtime bundle for that user, holding Node, the packed package and its production dependencies only', () => {
    const bundle = JSON.parse(readFileSync(join(work, 'bundle', 'config.json'), 'utf8')) as { process: { user: { uid: number; gid: number }; args: string[] } };
    expect(bundle.process.user).toMatchObject({ uid: 10001, gid: 10001 });
    expect(bundle.process.args).toEqual(['gpualert', '--help']);
    expect(readFileSync(join(rootfs, 'etc/passwd'), 'utf8')).toMatch(/^gpualert:x:10001:10001:/m);
    expect(readlinkSync(join(rootfs, 'usr/local/bin/gpualert'))).toBe('../lib/node_modules/gpualert/bin/gpualert.mjs');
    for (const path of ['usr/local/bin/node', 'usr/local/lib/gpualert/healthcheck.mjs', 'usr/local/lib/node_modules/gpualert/dist/gpualert.mjs', 'usr/local/lib/node_modules/kafkajs/package.json']) {
      expect(existsSync(join(rootfs, path)), path).toBe(true);
    }
    for (const absent of ['usr/local/lib/node_modules/gpualert/packages', 'usr/local/lib/node_modules/tsx', 'usr/local/lib/node_modules/typescript', 'usr/local/lib/node_modules/vitest']) {
      expect(existsSync(join(rootfs, absent)), absent).toBe(false);
    }
  });

  // chroot needs root; the build machines run the tests as root.
  const chroot = (args: readonly string[], env: Record<string, string> = {}) =>
    spawnSync('chroot', ['--userspec=10001:10001', rootfs, '/usr/bin/env', '-i', 'PATH=/usr/local/bin:/usr/bin', 'HOME=/nonexistent', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });

  it.skipIf(process.getuid?.() !== 0)("its entrypoint runs in its own root as its user: the version, a kernel log parsed, and the healthcheck's verdicts", () => {
    const version = chroot(['gpualert', '--version']);
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    copyFileSync(join(ROOT, 'test/fixtures/kernel/dmesg-gpu-fallen-off-bus.log'), join(rootfs, 'tmp/kernel.log'));
    const parsed = chroot(['gpualert', 'parse', 'kernel', '/tmp/kernel.log', '--host', 'n1']);
    expect(parsed.status, parsed.stderr).toBe(0);
    expect(parsed.stdout.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { data: { xid?: number } }).data.xid)).toContain(79);
    // The healthcheck: passes with no URL (the process alive is its health), fails on a port nothing serves.
    expect(chroot(['node', '/usr/local/lib/gpualert/healthcheck.mjs']).status).toBe(0);
    const down = chroot(['node', '/usr/local/lib/gpualert/healthcheck.mjs'], { GPUALERT_HEALTH_URL: 'http://127.0.0.1:9/healthz' });
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/unreachable/);
  }, 60_000);
});
