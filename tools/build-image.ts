/**
 * `npm run build:image`: gpualert's container image built with no Docker engine and no container
 * registry, by Debian's buildah (daemonless; vfs storage in a temporary root, chroot isolation,
 * nothing of the machine's own container configuration read), from deploy/docker/Containerfile.
 *
 * The Dockerfile's base (`node:24-…-slim`) comes from a container registry, which these machines
 * cannot reach; so the base is made here from Debian's packages (libc6, libgcc-s1, libstdc++6, and
 * `env` from coreutils for the command's `#!/usr/bin/env node`), committed, and the Containerfile
 * is built FROM it by digest. On top: Node 24's official binary (tools/node24.ts) and the packed
 * npm tarball installed with its production dependencies offline (tools/npm-offline-lock.ts), laid
 * out as `npm install --global` would. Output: dist-image/oci (an OCI layout, for umoci) and
 * dist-image/gpualert.docker.tar (a docker-archive, which keeps the HEALTHCHECK an OCI config has
 * no field for). Running the image needs a container engine; these machines have none.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { debianRoot } from './debian-root.ts';
import { node24Binary } from './node24.ts';
import { offlineLock } from './npm-offline-lock.ts';
import { packCheckout } from './npm-pack.ts';

const ROOT = resolve(import.meta.dirname, '..');
export const IMAGE_DIR = join(ROOT, 'dist-image');
export const OCI_LAYOUT = join(IMAGE_DIR, 'oci');
export const OCI_REF = `oci:${OCI_LAYOUT}:gpualert`;
export const DOCKER_ARCHIVE = join(IMAGE_DIR, 'gpualert.docker.tar');
/** Debian's buildah, skopeo and umoci, with what buildah links against and the containers' default policy. */
export const CONTAINER_TOOL_PACKAGES = ['buildah', 'skopeo', 'umoci', 'golang-github-containers-common', 'libgpgme11', 'libassuan0'] as const;
/** What Node's official Linux binary links against (ldd), and coreutils for /usr/bin/env alone. */
export const BASE_PACKAGES = ['libc6', 'libgcc-s1', 'libstdc++6', 'gcc-12-base', 'coreutils'] as const;
const ARCH_LIB = 'usr/lib/x86_64-linux-gnu';
/** A port nothing answers on: a step that would reach a registry fails instead of fetching. */
const DEAD_REGISTRY = 'http://127.0.0.1:9/';

export interface ContainerTools {
  readonly bin: (name: 'buildah' | 'skopeo' | 'umoci') => string;
  /** The environment every tool runs in: its own libraries, configuration and storage. */
  readonly env: NodeJS.ProcessEnv;
  /** `--signature-policy`: Debian's default (accept anything local; nothing is pulled). */
  readonly policy: string;
  readonly storage: string;
}

/** Debian's container tools, unpacked into the cache (not installed), with a storage root of their own under `work`. */
export function containerTools(work: string): ContainerTools {
  const root = debianRoot('container-tools', CONTAINER_TOOL_PACKAGES);
  const conf = join(work, 'conf');
  const storage = join(work, 'storage');
  mkdirSync(conf, { recursive: true });
  // No registry is consulted: an unqualified or remote name fails instead of reaching out.
  writeFileSync(join(conf, 'registries.conf'), 'unqualified-search-registries = []\n');
  writeFileSync(join(conf, 'storage.conf'), `[storage]\ndriver = "vfs"\nrunroot = "${join(storage, 'run')}"\ngraphroot = "${join(storage, 'graph')}"\n`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${join(root, 'usr/bin')}:${process.env.PATH ?? ''}`,
    LD_LIBRARY_PATH: join(root, ARCH_LIB),
    CONTAINERS_REGISTRIES_CONF: join(conf, 'registries.conf'),
    CONTAINERS_STORAGE_CONF: join(conf, 'storage.conf'),
    CONTAINERS_CONF: join(root, 'usr/share/containers/containers.conf'),
    BUILDAH_ISOLATION: 'chroot',
    TMPDIR: work,
  };
  return { bin: (name) => join(root, 'usr/bin', name), env, policy: join(root, 'etc/containers/policy.json'), storage };
}

export function runTool(tools: ContainerTools, name: 'buildah' | 'skopeo' | 'umoci', args: readonly string[], cwd?: string): string {
  const result = spawnSync(tools.bin(name), args, { env: tools.env, cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) {
    const why = (result.stderr || result.stdout || String(result.error ?? '')).trim().split('\n').slice(-3).join(' | ');
    throw new Error(`${name} ${args.join(' ')} failed (${result.status ?? result.signal}): ${why}`);
  }
  return result.stdout;
}

function run(command: string, args: readonly string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${(result.stderr || result.stdout).trim().split('\n').pop() ?? ''}`);
}

/** The base's root: Debian's libraries, /usr/bin/env, a gpualert user (10001) and /tmp. */
function baseRoot(into: string): void {
  const debian = debianRoot('image-base', BASE_PACKAGES);
  for (const dir of ['lib', 'lib64', 'usr/lib', 'etc/ld.so.conf.d']) cpSync(join(debian, dir), join(into, dir), { recursive: true, verbatimSymlinks: true });
  mkdirSync(join(into, 'usr/bin'), { recursive: true });
  cpSync(join(debian, 'usr/bin/env'), join(into, 'usr/bin/env'));
  // coreutils' own libraries are not wanted: env needs libc alone.
  rmSync(join(into, 'usr/lib/x86_64-linux-gnu/coreutils'), { recursive: true, force: true });
  writeFileSync(join(into, 'etc/passwd'), 'root:x:0:0:root:/root:/usr/sbin/nologin\ngpualert:x:10001:10001:gpualert:/nonexistent:/usr/sbin/nologin\n');
  writeFileSync(join(into, 'etc/group'), 'root:x:0:\ngpualert:x:10001:\n');
  mkdirSync(join(into, 'tmp'), { recursive: true });
  chmodSync(join(into, 'tmp'), 0o1777);
}

/** /usr/local as `npm install --global --omit=dev gpualert-*.tgz` leaves it, made offline from this checkout's lock. */
function localTree(into: string, work: string): void {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    bin: Record<string, string>;
    dependencies: Record<string, string>;
  };
  const packs = join(work, 'pack');
  mkdirSync(packs);
  const tarball = packCheckout(packs);
  const app = join(work, 'app');
  mkdirSync(app);
  const { packageJson, lock } = offlineLock({
    repositoryLock: join(ROOT, 'package-lock.json'),
    packageName: pkg.name,
    version: pkg.version,
    tarball,
    dependencies: pkg.dependencies,
    bin: pkg.bin,
    consumer: 'gpualert-image',
    registry: DEAD_REGISTRY,
  });
  writeFileSync(join(app, 'package.json'), packageJson);
  writeFileSync(join(app, 'package-lock.json'), lock);
  run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--offline', '--registry', DEAD_REGISTRY, '--no-audit', '--no-fund', '--silent'], app);
  mkdirSync(join(into, 'bin'), { recursive: true });
  mkdirSync(join(into, 'lib/gpualert'), { recursive: true });
  rmSync(join(app, 'node_modules/.bin'), { recursive: true, force: true });
  rmSync(join(app, 'node_modules/.package-lock.json'), { force: true });
  cpSync(join(app, 'node_modules'), join(into, 'lib/node_modules'), { recursive: true, verbatimSymlinks: true });
  cpSync(node24Binary(), join(into, 'bin/node'));
  chmodSync(join(into, 'bin/node'), 0o755);
  symlinkSync(`../lib/node_modules/gpualert/${pkg.bin.gpualert!.replace(/^\.\//, '')}`, join(into, 'bin/gpualert'));
  cpSync(join(ROOT, 'deploy/docker/healthcheck.mjs'), join(into, 'lib/gpualert/healthcheck.mjs'));
}

export interface BuiltImage {
  /** `localhost/gpualert-base@sha256:…`: what the Containerfile was built FROM. */
  readonly base: string;
  /** The base's layers (diff ids): the image's first layers must be these. */
  readonly baseLayers: readonly string[];
  readonly ociLayout: string;
  readonly dockerArchive: string;
  readonly seconds: number;
}

export function buildImage(): BuiltImage {
  const started = Date.now();
  process.umask(0o022);
  const work = mkdtempSync(join(tmpdir(), 'gpualert-image-'));
  let last = started;
  const step = (what: string) => {
    if (process.env.GPUALERT_BUILD_STEPS === '1') process.stderr.write(`[build-image] ${what}: ${((Date.now() - last) / 1000).toFixed(1)} s\n`);
    last = Date.now();
  };
  try {
    const tools = containerTools(work);
    const policy = ['--signature-policy', tools.policy];
    const base = join(work, 'base');
    baseRoot(base);
    const context = join(work, 'context');
    mkdirSync(context);
    step('base root');
    localTree(join(context, 'local'), work);
    step('npm pack and offline install');
    // The base, committed from scratch; its digest is what the Containerfile is built from.
    const container = runTool(tools, 'buildah', ['from', ...policy, 'scratch']).trim();
    runTool(tools, 'buildah', ['copy', container, base, '/']);
    runTool(tools, 'buildah', ['config', '--created-by', 'gpualert tools/build-image.ts: Debian libc6, libgcc-s1, libstdc++6, env', container]);
    runTool(tools, 'buildah', ['commit', ...policy, '--format', 'docker', '--quiet', container, 'localhost/gpualert-base:latest']);
    runTool(tools, 'buildah', ['rm', container]);
    const digest = runTool(tools, 'buildah', ['images', '--digests', '--format', '{{.Digest}}', 'localhost/gpualert-base:latest']).trim();
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`buildah gave the base no digest (${digest})`);
    const from = `localhost/gpualert-base@${digest}`;
    const baseLayers = (JSON.parse(runTool(tools, 'buildah', ['inspect', '--type', 'image', from])) as { OCIv1: { rootfs: { diff_ids: string[] } } }).OCIv1
      .rootfs.diff_ids;
    step('base committed');
    runTool(tools, 'buildah', [
      'build',
      ...policy,
      '--format',
      'docker',
      '--pull=never',
      '--build-arg',
      `BASE=${from}`,
      '--file',
      join(ROOT, 'deploy/docker/Containerfile'),
      '--tag',
      'localhost/gpualert:latest',
      '--quiet',
      context,
    ]);
    step('Containerfile built');
    rmSync(IMAGE_DIR, { recursive: true, force: true });
    mkdirSync(IMAGE_DIR, { recursive: true });
    runTool(tools, 'buildah', ['push', ...policy, '--quiet', 'localhost/gpualert:latest', OCI_REF]);
    runTool(tools, 'buildah', ['push', ...policy, '--quiet', 'localhost/gpualert:latest', `docker-archive:${DOCKER_ARCHIVE}:localhost/gpualert:latest`]);
    step('pushed to the OCI layout and the docker-archive');
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(`dist-image/: gpualert built FROM ${from} in ${seconds.toFixed(1)} s\n`);
    return { base: from, baseLayers, ociLayout: OCI_LAYOUT, dockerArchive: DOCKER_ARCHIVE, seconds };
  } finally {
    // vfs storage holds a full copy of every layer: nothing of it is kept.
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.filename === process.argv[1]) buildImage();
