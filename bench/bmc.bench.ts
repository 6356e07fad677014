import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MemoryBus } from '@gpualert/bus';
import { certificateFingerprint, redfishSource, startBmcCollector, type BmcTarget } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { format } from './harness.ts';

const MOCKUP = resolve(import.meta.dirname, '../test/fixtures/bmc/redfish/public-rackmount1');

/**
 * The loopback BMC fleet: DMTF's public-rackmount1 served over HTTPS (a self-signed certificate,
 * pinned by the collector) with Redfish sessions, by its own process (a cluster of workers) so
 * the figures are the collector's alone. It listens on every loopback address: 127.0.x.y is a
 * BMC of its own, with its own connections, as a fleet would be.
 */
const MOCK_SERVER = `
import cluster from 'node:cluster';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:https';
import { join, relative } from 'node:path';
const [root, keyFile, certFile, workers] = process.argv.slice(2);
if (cluster.isPrimary) {
  let ready = 0;
  for (let i = 0; i < Number(workers); i++) cluster.fork().on('message', (m) => { if (m.port && ++ready === Number(workers)) process.send?.({ port: m.port }); });
} else {
  const docs = new Map();
  const walk = (dir) => { for (const n of readdirSync(dir)) { const p = join(dir, n); if (statSync(p).isDirectory()) walk(p); else if (n === 'index.json') { const rel = relative(root, dir); docs.set(rel ? '/redfish/v1/' + rel : '/redfish/v1', readFileSync(p)); } } };
  walk(root);
  let next = 0;
  const server = createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (req, res) => {
    const path = req.url.replace(/\\/$/, '');
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') { const id = String(++next); res.writeHead(201, { 'x-auth-token': 't' + id, location: '/redfish/v1/SessionService/Sessions/' + id }); return res.end('{}'); }
      if (req.method === 'DELETE') { res.writeHead(204); return res.end(); }
      if (!req.headers['x-auth-token']) { res.writeHead(401); return res.end(); }
      const doc = path.includes('?') ? undefined : docs.get(path);
      res.writeHead(doc ? 200 : 404, { 'content-type': 'application/json' });
      res.end(doc ?? '{}');
    });
  });
  server.keepAliveTimeout = 120000;
  server.listen(Number(process.env.BMC_PORT), '0.0.0.0', () => process.send?.({ port: server.address().port }));
}
`;

/**
 * One `collect bmc` (the collector in this process, on the in-process bus) polling 1,000 BMCs
 * with the production schedule compressed: every BMC every GPUALERT_BENCH_BMC_INTERVAL_S (default
 * 3 s, a tenth of the 30 s default) for GPUALERT_BENCH_BMC_CYCLES cycles (default 4). Reports polls/s
 * (what 30 s needs: 1,000 / 30 = 33 polls/s), CPU per poll and at the 30 s schedule, and RSS.
 */
export async function benchBmc(): Promise<void> {
  const bmcs = Number(process.env.GPUALERT_BENCH_BMCS ?? 1_000);
  const intervalS = Number(process.env.GPUALERT_BENCH_BMC_INTERVAL_S ?? 3);
  const cycles = Number(process.env.GPUALERT_BENCH_BMC_CYCLES ?? 4);
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-bmc-bench-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=bmc.bench',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  writeFileSync(join(dir, 'server.mjs'), MOCK_SERVER);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const server = spawn(process.execPath, [join(dir, 'server.mjs'), MOCKUP, join(dir, 'key.pem'), join(dir, 'cert.pem'), '2'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BMC_PORT: String(port) },
  });
  await once(server, 'message');
  const fingerprint256 = certificateFingerprint(readFileSync(join(dir, 'cert.pem'), 'utf8'));

  const targets: BmcTarget[] = Array.from({ length: bmcs }, (_, i) => ({
    host: `gpu-node-${i}`,
    source: redfishSource({
      url: `https://127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}:${port}`,
      auth: 'session',
      credentials: { username: 'bench', password: 'bench' },
      tls: { fingerprint256 },
      timeoutMs: 10_000,
      maxBodyBytes: 4 << 20,
      maxSockets: 2,
    }),
  }));
  const bus = new MemoryBus({ retainPerPartition: 10_000 });
  await bus.ensureTopics(Object.values(TOPICS));
  const log = createLogger({ name: 'bench', level: 'silent' });
  const rssBefore = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const collector = startBmcCollector({ bus, store: new MemoryStore(), targets, intervalMs: intervalS * 1_000, log });
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 250);
  // The first cycle opens sessions and TLS connections; the figures are from the cycles after it.
  await new Promise((r) => setTimeout(r, intervalS * 1_000));
  const warmPolls = collector.stats.polls;
  const cpu1 = process.cpuUsage();
  const t1 = performance.now();
  await new Promise((r) => setTimeout(r, intervalS * 1_000 * (cycles - 1)));
  const polls = collector.stats.polls - warmPolls;
  const cpu = process.cpuUsage(cpu1);
  const seconds = (performance.now() - t1) / 1_000;
  clearInterval(sampler);
  const failures = collector.stats.failures;
  await collector.stop();
  server.kill();
  const cpuMs = (cpu.user + cpu.system) / 1_000;
  const needed = bmcs / intervalS;
  const perPollMs = cpuMs / polls;
  console.log(
    `bmc: ${bmcs} BMCs (Redfish over pinned TLS, sessions, ${targets.length > 0 ? 'public-rackmount1' : ''}) every ${intervalS} s, ${cycles - 1} measured cycles`,
  );
  console.log(
    `${'bmc polls/s (the schedule asks for)'.padEnd(58)} ${format(polls / seconds).padStart(12)} /s  (${format(needed)}/s asked; ${failures} failed polls)`,
  );
  console.log(`${'bmc CPU per poll (about 25 requests)'.padEnd(58)} ${format(perPollMs).padStart(12)} ms`);
  console.log(`${'bmc CPU, this schedule'.padEnd(58)} ${format((cpuMs / (seconds * 1_000)) * 100).padStart(12)} % of a core`);
  console.log(
    `${`bmc CPU at 30 s for ${bmcs} BMCs (${format(bmcs / 30)} polls/s)`.padEnd(58)} ${format(((perPollMs * bmcs) / 30 / 1_000) * 100).padStart(12)} % of a core`,
  );
  console.log(
    `${'bmc RSS, peak (before start)'.padEnd(58)} ${format(peakRss / 2 ** 20).padStart(12)} MB  (${format(rssBefore / 2 ** 20)} MB; first-cycle CPU ${format((cpu1.user + cpu1.system - cpu0.user - cpu0.system) / 1_000)} ms, ${format((t1 - started) / 1_000)} s)`,
  );
}
