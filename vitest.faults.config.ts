import { defineConfig } from 'vitest/config';

/**
 * The fault suite: each file starts a Kafka broker and a Redis of its own, because its cases stop,
 * kill and wipe them. Files run one after another; on two cores, in parallel they would measure
 * the machine, not gpualert.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.faults.ts'],
    testTimeout: 240_000,
    hookTimeout: 180_000,
    pool: 'forks',
    fileParallelism: false,
    reporters: ['default', './test/infra/summary-reporter.ts'],
  },
});
