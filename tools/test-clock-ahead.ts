/**
 * The tests again with every clock they start two years ahead: a test that passes only before some
 * day (a fixture's silence, window, certificate or notice judged against the wall clock) fails here
 * today instead of on that day. Part of `npm test`; `npm run test:clock-ahead` runs it alone.
 *
 * The clock moves through `test/infra/clock-ahead.mjs`, preloaded into this run's node processes
 * (NODE_OPTIONS reaches the test workers and every `gpualert` process they start)
 * and put into each Chromium page (test/infra/clock-shift.mjs). Left out: the files that compare gpualert with a program whose
 * clock cannot be moved (Debian's Go binaries read the kernel's clock directly, so no preload or
 * LD_PRELOAD reaches them): the real Alertmanager, amtool and Prometheus, each named below.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
/** Two years (731 days: one of them a leap year's), so a fixture dated next year is already past. */
const CLOCK_AHEAD_MS = 731 * 24 * 60 * 60_000;
const REAL_CLOCK_ONLY = [
  'test/alertmanager/amtool.test.ts', // amtool dates the silences it adds (startsAt: its now)
  'test/alertmanager/differential.test.ts', // Alertmanager 0.25 judges mute intervals and silences beside gpualert
  'test/alertmanager/prometheus.test.ts', // Prometheus stamps the alerts it pushes (endsAt: its now + 4 evaluations)
  'test/prometheus/collect-prometheus.test.ts', // Prometheus answers a query at gpualert's "now" from what it scraped
];

const preload = resolve(ROOT, 'test/infra/clock-ahead.mjs');
const env = {
  ...process.env,
  GPUALERT_CLOCK_OFFSET_MS: String(CLOCK_AHEAD_MS),
  NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${JSON.stringify(preload)}`].filter(Boolean).join(' '),
};
const ahead = new Date(Date.now() + CLOCK_AHEAD_MS).toISOString();
process.stderr.write(`[clock-ahead] the tests again with the clock at ${ahead}; on the real clock only: ${REAL_CLOCK_ONLY.join(', ')}\n`);
const args = [resolve(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...REAL_CLOCK_ONLY.flatMap((file) => ['--exclude', file])];
const run = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit', env });
process.exit(run.status ?? 1);
