import { createServer, type Server } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { envelopeMessage, MemoryBus, type Bus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { createLogger } from '@gpualert/log';
import { RoutesFile } from '@gpualert/notify';
import { createNotifierServer, NotifierMetrics, startNotifier } from '@gpualert/notifier';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { format, median } from './harness.ts';

/** The bench's API token (the notifier refuses its API without one). */
const TOKEN = 'storm-bench-token-0123456789';
/** One alert in this many is critical, and pages. */
const PAGE_EVERY = 200;
/** Alerts per POST /api/v2/alerts: Prometheus sends at most 256 a batch, and the API takes 64 KiB a body. */
const POST_BATCH = 200;

interface Arrival {
  readonly at: number;
  readonly path: string;
  readonly bytes: number;
}

/** A loopback vendor answering as DingTalk, a webhook and PagerDuty's Events API v2 do, noting when each request arrived. */
async function loopbackVendor(): Promise<{ server: Server; url: string; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  const server = createServer((request, response) => {
    let bytes = 0;
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => {
      const path = new URL(request.url ?? '/', 'http://vendor').pathname;
      arrivals.push({ at: performance.now(), path, bytes });
      response.setHeader('content-type', 'application/json');
      if (path === '/v2/enqueue') response.writeHead(202).end('{"status":"success","message":"Event processed"}');
      else response.end('{"errcode":0,"errmsg":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, arrivals };
}

type Path = 'bus' | 'api' | 'kafka';

interface StormFigures {
  readonly loopP99Ms: number;
  readonly loopMaxMs: number;
  readonly healthyMaxMs: number;
  /** From the first alert sent to the last group message (chat and webhook) at the vendor. */
  readonly groupsMs: number;
  /** From the first alert sent to the last page at the vendor. */
  readonly lastPageMs: number;
  readonly pages: number;
  readonly bytes: number;
}

/**
 * One storm: `alerts` firing alerts of one rule into one group at DingTalk and one at a webhook
 * (group_by alertname, group_wait 1s), one in PAGE_EVERY critical and paged at PagerDuty, all
 * loopback vendors. Sent on the in-process bus, through POST /api/v2/alerts, or through Kafka.
 * Measured the whole time: the event loop's delay (p99 and longest, monitorEventLoopDelay) and
 * GET /-/healthy every 20 ms on the notifier's own server (its slowest answer).
 */
async function storm(alerts: number, path: Path, brokers?: string): Promise<StormFigures> {
  const vendor = await loopbackVendor();
  const routes = RoutesFile.parse({
    receivers: [
      { name: 'chat', channel: 'dingtalk', settings: { url: `${vendor.url}/robot/send?access_token=bench` } },
      { name: 'hook', channel: 'webhook', settings: { url: `${vendor.url}/hook` } },
      { name: 'pager', channel: 'pagerduty', settings: { url: `${vendor.url}/v2/enqueue`, routing_key: 'x'.repeat(32) } },
    ],
    route: {
      receiver: 'chat',
      group_by: ['alertname'],
      group_wait: '1s',
      group_interval: '5m',
      repeat_interval: '4h',
      routes: [
        { receiver: 'hook', continue: true },
        { receiver: 'pager', matchers: ['severity="critical"'], page: true, continue: true },
        { receiver: 'chat' },
      ],
    },
  });
  const bus: Bus = path === 'kafka' ? new KafkaBus({ brokers: [brokers!], topicPrefix: `bench-storm-${Date.now()}.`, partitions: 3 }) : new MemoryBus();
  if (bus instanceof KafkaBus) await bus.ensureTopics(Object.values(TOPICS));
  const store = new MemoryStore();
  const log = createLogger({ name: 'bench', level: 'silent' });
  const notifier = await startNotifier({ bus, store, log, routes, env: {}, flushEveryMs: 200 });
  const server = createNotifierServer(store, new NotifierMetrics(), TOKEN, bus, {}, routes, notifier);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const api = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  const severity = (i: number) => (i % PAGE_EVERY === 0 ? 'critical' : 'warning');
  const pages = Math.ceil(alerts / PAGE_EVERY);
  // The alerts are made before the clock starts (the bench's work, not the notifier's), and the probe's client warmed.
  const messages =
    path === 'api'
      ? []
      : Array.from({ length: alerts }, (_, i) =>
          envelopeMessage(
            newEnvelope({
              type: 'alert',
              host: `gpu-node-${i}`,
              source: 'bench',
              labels: { alertname: 'GpuTemp', cluster: 'lab' },
              data: {
                fingerprint: `fp${i}`,
                status: 'firing',
                severity: severity(i),
                category: 'thermal',
                rule: 'gpu-temp',
                summary: `GPU 3 on gpu-node-${i} is 12 °C over its own normal`,
                starts_at: new Date().toISOString(),
                evidence: [],
              },
            }),
          ),
        );
  await (await fetch(`${api}/-/healthy`)).text();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let healthyMaxMs = 0;
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const sent = performance.now();
      const res = await fetch(`${api}/-/healthy`);
      await res.text();
      healthyMaxMs = Math.max(healthyMaxMs, performance.now() - sent);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();

  const started = performance.now();
  if (path === 'api') {
    const now = new Date().toISOString();
    for (let i = 0; i < alerts; i += POST_BATCH) {
      const batch = Array.from({ length: Math.min(POST_BATCH, alerts - i) }, (_, j) => ({
        labels: { alertname: 'GpuTemp', instance: `gpu-node-${i + j}:9400`, severity: severity(i + j) },
        annotations: { summary: `GPU 3 on gpu-node-${i + j} is 12 °C over its own normal` },
        startsAt: now,
      }));
      const res = await fetch(`${api}/api/v2/alerts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
      if (res.status !== 200) throw new Error(`POST /api/v2/alerts: ${res.status} ${await res.text()}`);
    }
  } else {
    for (let i = 0; i < messages.length; i += 500) await bus.publish(TOPICS.alerts, messages.slice(i, i + 500));
  }
  const done = () =>
    vendor.arrivals.filter((a) => a.path === '/v2/enqueue').length >= pages &&
    vendor.arrivals.some((a) => a.path === '/hook') &&
    vendor.arrivals.some((a) => a.path === '/robot/send');
  while (!done() && performance.now() - started < 300_000) await new Promise((resolve) => setTimeout(resolve, 50));
  probing = false;
  await probe;
  loop.disable();
  const at = (paths: readonly string[]) => Math.max(...vendor.arrivals.filter((a) => paths.includes(a.path)).map((a) => a.at)) - started;
  const figures: StormFigures = {
    loopP99Ms: loop.percentile(99) / 1e6,
    loopMaxMs: loop.max / 1e6,
    healthyMaxMs,
    groupsMs: at(['/hook', '/robot/send']),
    lastPageMs: at(['/v2/enqueue']),
    pages: vendor.arrivals.filter((a) => a.path === '/v2/enqueue').length,
    bytes: vendor.arrivals.reduce((n, a) => n + a.bytes, 0),
  };
  await new Promise((resolve) => server.close(resolve));
  await notifier.stop();
  await bus.close();
  await new Promise((resolve) => vendor.server.close(resolve));
  return figures;
}

/**
 * An alert storm through the notifier (issue 27): with 5,000 and 20,000 alerts (one group per
 * receiver, one in 200 paged), sent on the in-process bus, through the v2 API, and through Kafka
 * (a broker from Apache Kafka's jars, or KAFKA_BROKERS): the event loop's delay, the slowest
 * /-/healthy, the time to the last group message and to the last page; medians of 3 runs
 * (`GPUALERT_STORM_ALERTS=N` runs N alerts once per path; `GPUALERT_STORM_PATHS=bus,api` picks paths).
 */
export async function benchNotifierStorm(): Promise<void> {
  console.log(`\n## Notifier storm: N firing alerts, one group at DingTalk and one at a webhook, 1 in ${PAGE_EVERY} paged at PagerDuty (loopback vendors)`);
  const one = Number(process.env.GPUALERT_STORM_ALERTS ?? 0);
  const paths = (process.env.GPUALERT_STORM_PATHS ?? 'bus,api,kafka').split(',') as Path[];
  const broker = paths.includes('kafka') && !process.env.KAFKA_BROKERS ? await KafkaBroker.create() : undefined;
  try {
    for (const path of paths) {
      for (const alerts of one > 0 ? [one] : [5_000, 20_000]) {
        const runs: StormFigures[] = [];
        for (let i = 0; i < (one > 0 ? 1 : 3); i += 1) runs.push(await storm(alerts, path, process.env.KAFKA_BROKERS ?? broker?.brokers));
        const m = (pick: (f: StormFigures) => number) => format(median(runs.map(pick))).padStart(7);
        console.log(
          `${`${format(alerts)} alerts, ${path}`.padEnd(22)} event-loop delay p99 ${m((f) => f.loopP99Ms)} ms, max ${m((f) => f.loopMaxMs)} ms; /-/healthy max ${m((f) => f.healthyMaxMs)} ms; groups out at ${m((f) => f.groupsMs)} ms, last of ${runs[0]!.pages} pages at ${m((f) => f.lastPageMs)} ms; ${format(runs[0]!.bytes / 1e6)} MB sent  (medians of ${runs.length})`,
        );
      }
    }
  } finally {
    await broker?.destroy();
  }
}
