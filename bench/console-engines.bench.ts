import { createServer } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { engineFleetSource } from '@gpualert/notifier';
import { syntheticFleetSnapshot } from '@gpualert/test-support';
import { close, listen } from '../test/infra/http.ts';
import { format, median } from './harness.ts';

/**
 * The split deployment's console read: the notifier asking an engine for its 10,000 hosts × 8 GPUs
 * (GPUALERT_BENCH_ENGINE_HOSTS), answered as one JSON document (what an older engine answers) and
 * as NDJSON (what the engine answers the notifier now). Prints the read's time and the longest the
 * notifier's event loop (which pages) was held meanwhile; medians of 5 reads each, after one warm-up.
 */
export async function benchConsoleEngines(): Promise<void> {
  const hosts = Number(process.env.GPUALERT_BENCH_ENGINE_HOSTS ?? 10_000);
  const runs = 5;
  console.log(`\n## Console from the engines: one engine's ${hosts.toLocaleString('en-US')} hosts × 8 GPUs read by the notifier`);
  const snapshot = syntheticFleetSnapshot(hosts, 8, Date.now());
  const { hosts: list, ...rest } = snapshot;
  const whole = JSON.stringify(snapshot);
  const lines = [JSON.stringify({ hosts: [], ...rest }), ...list.map((h) => JSON.stringify(h))].map((l) => `${l}\n`).join('');
  const server = createServer((req, res) => {
    const ndjson = (req.headers.accept ?? '').includes('application/x-ndjson') && req.url === '/v1/fleet';
    res.writeHead(200, { 'content-type': ndjson ? 'application/x-ndjson' : 'application/json' }).end(ndjson ? lines : whole);
  });
  const base = await listen(server);
  try {
    for (const [name, url] of [
      ['one JSON document (an older engine)', `${base}/json`],
      ['NDJSON, a host a line (the engine now)', base],
    ] as const) {
      // The stand-in for an older engine answers every path with the document; the notifier asks `${url}/v1/fleet`.
      const source = engineFleetSource([url], { timeoutMs: 60_000 });
      const times: number[] = [];
      const held: number[] = [];
      for (let i = 0; i <= runs; i += 1) {
        const delay = monitorEventLoopDelay({ resolution: 1 });
        delay.enable();
        const started = performance.now();
        const read = await source.snapshot(Date.now());
        const ms = performance.now() - started;
        delay.disable();
        if (read.hosts.length !== hosts) throw new Error(`${name}: read ${read.hosts.length} hosts of ${hosts} (${read.unavailable?.join('; ') ?? ''})`);
        if (i > 0) {
          times.push(ms);
          held.push(delay.max / 1e6);
        }
      }
      console.log(
        `${name.padEnd(44)} read ${format(median(times)).padStart(8)} ms   event loop held at most ${format(median(held)).padStart(7)} ms  (medians of ${runs}; ${((name.startsWith('NDJSON') ? lines : whole).length / 1048576).toFixed(1)} MiB)`,
      );
    }
  } finally {
    await close(server);
  }
}
