/**
 * The Node and C library settings gpualert's long-running services ship with: in the image
 * (deploy/docker/Containerfile), the systemd units (deploy/systemd), the agent's DaemonSet and its
 * .deb. `test/deploy/service-env.test.ts` holds those files to these values, and
 * `npm run bench -- e2e` runs the services with them.
 *
 * - `--max-semi-space-size`: V8's young generation, in MiB a semi-space. Node's default (16)
 *   keeps 32 MB resident that a service churning through Kafka batches refills at once; at 2 the
 *   engine's judging core ran 418-431k GPU samples/s against 428-457k with the default (two runs
 *   each, `bench engine`). The agent allocates little (a sample every 10 s): 1.
 * - `MALLOC_ARENA_MAX=2`: glibc otherwise gives each thread that allocates (libuv's pool, V8's
 *   helpers) an arena of its own, which keeps freed memory resident; with 2 the engine held 199 MB
 *   at the end of the e2e steady load against 278 MB without (one run each, bundled).
 */
export const SERVICE_ENV = { NODE_OPTIONS: '--max-semi-space-size=2', MALLOC_ARENA_MAX: '2' } as const;

/** The agent's: one per GPU host, where its footprint is multiplied by the fleet. */
export const AGENT_ENV = { NODE_OPTIONS: '--max-semi-space-size=1', MALLOC_ARENA_MAX: '2' } as const;
