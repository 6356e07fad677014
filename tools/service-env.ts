/**
 * The Node and C library settings gpualert's long-running services ship with: in the images
 * (Dockerfile, deploy/docker/Containerfile), the systemd units (deploy/systemd), the Kubernetes
 * manifests and the agent's .deb. `test/deploy/service-env.test.ts` holds those files to these
 * values, and `npm run bench -- e2e` runs the services with them.
 *
 * - `MALLOC_ARENA_MAX=2`, every service: glibc otherwise gives each thread that allocates (libuv's
 *   pool, V8's helpers) an arena of its own, which keeps freed memory resident. The engine held
 *   199 MB at the end of the e2e steady load with it, 278 MB without (one run each, bundled).
 * - `--max-semi-space-size`: V8's young generation, in MiB a semi-space. Node's default (16) keeps
 *   about 32 MB resident. The notifier and the intake allocate little: 2 (the notifier 97 MB
 *   against 129 MB). The agent allocates less still (a sample every 10 s): 1 (80 MB against
 *   102 MB). Not the engine: at 2 its envelope parsing ran 15 % slower (51,801 against 61,524
 *   messages/s, `bench engine`) and the garbage collector took 25 % of its busy time in the e2e
 *   drain against 14 %.
 */
export const MALLOC_ARENA_MAX = '2';

/** `NODE_OPTIONS` by service; none for the engine (above). */
export const SERVICE_NODE_OPTIONS: ReadonlyMap<string, string> = new Map([
  ['notifier', '--max-semi-space-size=2'],
  ['intake', '--max-semi-space-size=2'],
  ['agent', '--max-semi-space-size=1'],
]);

/** What a service's process is started with (above): the C library's setting, and its NODE_OPTIONS if it has any. */
export function serviceEnv(service: string): { MALLOC_ARENA_MAX: string; NODE_OPTIONS?: string } {
  const nodeOptions = SERVICE_NODE_OPTIONS.get(service);
  return { MALLOC_ARENA_MAX, ...(nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions }) };
}
