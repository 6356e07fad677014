import { createServer, type Server } from 'node:http';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { RoutesFile } from '@gpualert/notify';
import { startNotifier } from '@gpualert/notifier';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { format, median } from './harness.ts';

/** A loopback vendor that answers every request as DingTalk does, and notes when each arrived. */
async function loopbackVendor(): Promise<{ server: Server; url: string; arrivals: { at: number; bytes: number }[] }> {
  const arrivals: { at: number; bytes: number }[] = [];
  const server = createServer((request, response) => {
    let bytes = 0;
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => {
      arrivals.push({ at: performance.now(), bytes });
      response.setHeader('content-type', 'application/json');
      response.end('{"errcode":0,"errmsg":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, arrivals };
}

/**
 * One storm: `alerts` firing alerts of one rule into one group per receiver (chat at DingTalk, two
 * webhooks), on the in-process bus. Measured by a 20 ms timer the whole time: the longest the event
 * loop did not answer it (what a probe of /-/healthy would have waited), and when the last
 * receiver's request arrived.
 */
async function storm(alerts: number): Promise<{ stallMs: number; lastMs: number; bytes: number }> {
  const vendor = await loopbackVendor();
  const routes = RoutesFile.parse({
    receivers: [
      { name: 'chat', channel: 'dingtalk', settings: { url: `${vendor.url}/robot/send?access_token=bench` } },
      { name: 'hook', channel: 'webhook', settings: { url: `${vendor.url}/hook` } },
      { name: 'tickets', channel: 'webhook', settings: { url: `${vendor.url}/tickets` } },
    ],
    route: {
      receiver: 'chat', group_by: ['rule'], group_wait: '1s', group_interval: '5m', repeat_interval: '4h',
      routes: [{ receiver: 'hook', continue: true }, { receiver: 'tickets', continue: true }, { receiver: 'chat' }],
    },
  });
  const bus = new MemoryBus();
  const notifier = await startNotifier({ bus, store: new MemoryStore(), log: createLogger({ name: 'bench', level: 'silent' }), routes, env: {}, flushEveryMs: 200 });
  const messages = Array.from({ length: alerts }, (_, i) => envelopeMessage(newEnvelope({
    type: 'alert', host: `gpu-node-${i}`, source: 'bench', labels: { cluster: 'lab' },
    data: { fingerprint: `fp${i}`, status: 'firing', severity: 'warning', category: 'thermal', rule: 'gpu-temp', summary: `GPU 3 on gpu-node-${i} is 12 °C over its own normal`, starts_at: new Date().toISOString(), evidence: [] },
  })));
  let stallMs = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last - 20);
    last = now;
  }, 20);
  const started = performance.now();
  for (let i = 0; i < messages.length; i += 500) await bus.publish(TOPICS.alerts, messages.slice(i, i + 500));
  while (vendor.arrivals.length < 3 && performance.now() - started < 300_000) await new Promise((resolve) => setTimeout(resolve, 50));
  clearInterval(probe);
  const lastMs = Math.max(...vendor.arrivals.map((a) => a.at)) - started;
  const bytes = vendor.arrivals.reduce((n, a) => n + a.bytes, 0);
  await notifier.stop();
  await bus.close();
  await new Promise((resolve) => vendor.server.close(resolve));
  return { stallMs, lastMs, bytes };
}

/**
 * An alert storm through the notifier (issue 27): the event loop's longest stall and the time to
 * the last receiver's message, with 5,000 and 20,000 alerts in one group per receiver, 3 runs each
 * (`GPUALERT_STORM_ALERTS=N` runs N alerts once).
 */
export async function benchNotifierStorm(): Promise<void> {
  console.log('\n## Notifier storm: N firing alerts of one rule, one group each at DingTalk and two webhooks (in-process bus, loopback vendors)');
  const one = Number(process.env.GPUALERT_STORM_ALERTS ?? 0);
  for (const alerts of one > 0 ? [one] : [5_000, 20_000]) {
    const runs: { stallMs: number; lastMs: number; bytes: number }[] = [];
    for (let i = 0; i < (one > 0 ? 1 : 3); i += 1) runs.push(await storm(alerts));
    const stall = median(runs.map((r) => r.stallMs));
    const lastMs = median(runs.map((r) => r.lastMs));
    console.log(`${`${format(alerts)} alerts`.padEnd(16)} longest event-loop stall ${format(stall).padStart(8)} ms, last receiver's message at ${format(lastMs).padStart(8)} ms, ${format(runs[0]!.bytes / 1e6)} MB sent  (medians of ${runs.length})`);
  }
}
