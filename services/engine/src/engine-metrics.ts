import { createServer, type Server } from 'node:http';
import { BUS_METRICS } from '@gpualert/bus';
import { fleetMetricsSteps, type EngineState, type FleetMetricsInput, type FleetMetricsText, type RuleSet } from '@gpualert/engine';
import { processMetrics, ReloadMetrics, type Readiness } from '@gpualert/runtime';
import { TOPICS, type GpuSampleData } from '@gpualert/schema';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineFleetView } from './engine-fleet-view.ts';
import { fleetViewAnswer } from './fleet-view-http.ts';

/** `gpualert engine`'s port for `/metrics` and `/healthz` (docs/architecture.md, "Ports"). */
export const DEFAULT_ENGINE_PORT = 9470;

/** A render serves every scrape for this long after it: 30 scrapers at once cost one render, not 30. */
export const METRICS_RENDER_REUSE_MS = 1_000;
/** A render works this long before it hands the event loop back: what a fault's batch or a probe waits for at most. */
export const METRICS_RENDER_SLICE_MS = 10;
/** Headers arrive in one round trip; 10 s forgives a slow link and cuts a slowloris off early (as the notifier's server). */
export const METRICS_HEADERS_TIMEOUT_MS = 10_000;
/** A scrape is a GET without a body: 30 s for the whole request is generous; longer is a client holding a socket. */
export const METRICS_REQUEST_TIMEOUT_MS = 30_000;

const INPUT_TOPICS = [TOPICS.gpuSamples, TOPICS.kernelEvents, TOPICS.providerEvents, TOPICS.hostInventory] as const;

/**
 * The engine's metrics: the pipeline's own health (prom-client, counted as batches are judged) and
 * the fleet as the engine sees it (rendered from its state when scraped: judging pays one Map.set
 * per sample for it). With several engines, each one's state holds only the hosts it owns, so
 * each exports those.
 */
export class EngineMetrics {
  readonly registry = new Registry();
  readonly batchDuration = new Histogram({
    name: 'gpualert_engine_batch_duration_seconds',
    help: 'Time to judge one batch and publish its alerts and state.',
    labelNames: ['topic'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  /** Whether the last rules reload took (SIGHUP). */
  private readonly reloads = new ReloadMetrics(this.registry, 'rules and the Xid catalog');

  /** A load (at start) or a reload, and whether it took; a reload that took brings its rules (the baselines and idle cost /metrics shows). */
  reloaded(ok: boolean, at = Date.now(), ruleSet?: RuleSet): void {
    this.reloads.reloaded(ok, at);
    if (ok && ruleSet) this.ruleSet = ruleSet;
  }

  readonly lag = new Gauge({
    name: 'gpualert_engine_consumer_lag_messages',
    help: 'Messages behind the end of each input partition this engine owns, at its latest batch.',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly deadletters = new Counter({
    name: 'gpualert_engine_deadletters_total',
    help: 'Input the engine set aside on gpualert.deadletter (event time out of window), by topic.',
    labelNames: ['topic'] as const,
    registers: [this.registry],
  });
  readonly tickDuration = new Histogram({
    name: 'gpualert_engine_tick_duration_seconds',
    help: "Time of one tick's judging: every owned host's quiet periods and absences, and the operators' resolves.",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly tickWall = new Histogram({
    name: 'gpualert_engine_tick_wall_seconds',
    help: "Time from a tick's start to its last slice's end: its judging and the batches judged between its slices.",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly ticksSkipped = new Counter({
    name: 'gpualert_engine_ticks_skipped_total',
    help: 'Ticks not started because the last one was still running (every 2 s): absence is judged less often than that.',
    registers: [this.registry],
  });
  readonly renderDuration = new Histogram({
    name: 'gpualert_engine_metrics_render_seconds',
    help: 'Time from the start to the end of one render of the fleet metrics, the work run between its slices included.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });
  readonly seriesDropped = new Counter({
    name: 'gpualert_metrics_series_dropped_total',
    help: 'Alert series a render left out past the per-host cap (MAX_ALERT_SERIES_PER_HOST), summed over renders.',
    registers: [this.registry],
  });
  /** Each owned host's latest sample: the state keeps no raw values. */
  private readonly samples = new Map<string, GpuSampleData>();
  private state: EngineState | undefined;
  /** The render in progress or the latest one, and when it finished (undefined while in progress). */
  private last: { text: Promise<string>; done?: number } | undefined;

  constructor(
    private ruleSet: RuleSet,
    private readonly prices?: FleetMetricsInput['prices'],
    /** `renderSliceMs`: how long the render works before it hands the event loop back (default `METRICS_RENDER_SLICE_MS`). */
    private readonly options: { reuseMs?: number; now?: () => number; renderSliceMs?: number } = {},
  ) {
    // Zeros from the start: a dashboard's dead-letter panel has a series before the first one.
    for (const topic of INPUT_TOPICS) this.deadletters.inc({ topic }, 0);
  }

  /** The service's state object (its `hosts` are replaced on each assignment; the object stays). */
  attach(state: EngineState): void {
    this.state = state;
  }

  noteSample(host: string, data: GpuSampleData): void {
    this.samples.set(host, data);
  }

  /** A new assignment: the hosts another engine now owns are no longer ours to show. */
  forgetSamples(): void {
    this.samples.clear();
    // A render begun before (or within its reuse window) shows hosts this engine may no longer own.
    this.last = undefined;
  }

  /**
   * The exposition. Scrapes that arrive while one renders get its text, and so do those within
   * `reuseMs` (METRICS_RENDER_REUSE_MS) after it: a render is the engine's CPU, taken in slices
   * between judging, so concurrent scrapers must not multiply it.
   */
  render(): Promise<string> {
    const now = this.options.now ?? Date.now;
    const last = this.last;
    if (last && (last.done === undefined || now() - last.done < (this.options.reuseMs ?? METRICS_RENDER_REUSE_MS))) return last.text;
    const current: { text: Promise<string>; done?: number } = { text: this.renderNow() };
    this.last = current;
    current.text.then(
      () => {
        current.done = now();
      },
      () => {
        if (this.last === current) this.last = undefined;
      }, // a failed render is not served again
    );
    return current.text;
  }

  private async renderNow(): Promise<string> {
    const started = performance.now();
    let fleet = '';
    if (this.state) {
      for (const host of this.samples.keys()) if (this.state.hosts[host] === undefined) this.samples.delete(host);
      const out = await inSlices(
        fleetMetricsSteps({
          state: this.state,
          ruleSet: this.ruleSet,
          samples: this.samples,
          ...(this.prices ? { prices: this.prices } : {}),
        }),
        this.options.renderSliceMs ?? METRICS_RENDER_SLICE_MS,
      );
      fleet = out.text;
      this.seriesDropped.inc(out.dropped);
    }
    this.renderDuration.observe((performance.now() - started) / 1000);
    return `${fleet}${await this.registry.metrics()}${await processMetrics('gpualert_engine_').metrics()}${await BUS_METRICS.metrics()}`;
  }
}

/**
 * Runs the render's steps for about `sliceMs` at a time, with a turn of the event loop between:
 * batches, ticks and probes go on while a big fleet renders, each waiting for a slice at most.
 */
async function inSlices(steps: Generator<void, FleetMetricsText, void>, sliceMs: number): Promise<FleetMetricsText> {
  let sliceStarted = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - sliceStarted >= sliceMs) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStarted = performance.now();
    }
  }
}

/**
 * `GET /metrics`, `GET /healthz` (liveness) and `GET /readyz` (readiness, from `ready`) on `port`
 * (0 picks a free one); with `fleet`, the console's reads of the hosts this engine owns
 * (`GET /v1/fleet`, `GET /v1/fleet/{host}/{gpu}/history`: fleet-view-http.ts). Resolves once listening. A
 * request with a body is refused unread (413, connection closed); headers must arrive within
 * `headersTimeoutMs`, the request within `requestTimeoutMs`.
 */
export async function startEngineMetricsServer(
  metrics: EngineMetrics,
  port: number,
  host = '0.0.0.0',
  limits: { headersTimeoutMs?: number; requestTimeoutMs?: number } = {},
  ready?: () => Promise<Readiness>,
  fleet?: EngineFleetView,
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer({ connectionsCheckingInterval: 1_000 }, (request, response) => {
    const declared = request.headers['content-length'];
    if ((declared !== undefined && declared !== '0') || request.headers['transfer-encoding'] !== undefined) {
      response.writeHead(413, { 'content-type': 'text/plain', connection: 'close' }).end('a request to the engine takes no body\n');
      return;
    }
    const path = (request.url ?? '/').split('?')[0];
    // Liveness: the event loop answered.
    if (request.method === 'GET' && path === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    // Readiness: Kafka, the consumer group and the store answer; the reason when not.
    if (request.method === 'GET' && path === '/readyz') {
      (ready ? ready() : Promise.resolve({ ready: true, checks: {} })).then(
        (state) =>
          response
            .writeHead(state.ready ? 200 : 503, { 'content-type': 'application/json' })
            .end(JSON.stringify({ status: state.ready ? 'ready' : 'not ready', checks: state.checks })),
        (error: unknown) => response.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'not ready', error: String(error) })),
      );
      return;
    }
    if (request.method === 'GET' && path === '/metrics') {
      metrics.render().then(
        (text) => response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(text),
        (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(error)}\n`),
      );
      return;
    }
    if (request.method === 'GET' && fleet && path?.startsWith('/v1/fleet')) {
      fleetViewAnswer(fleet, path, request.headers.accept ?? '').then(
        (answer) => response.writeHead(answer.status, { 'content-type': answer.type, 'cache-control': 'no-store' }).end(answer.body),
        (error: unknown) =>
          response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'fleet_failed', message: String(error) })),
      );
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: GET /metrics, /healthz or /readyz${fleet ? ', /v1/fleet' : ''}\n`);
  });
  server.headersTimeout = limits.headersTimeoutMs ?? METRICS_HEADERS_TIMEOUT_MS;
  server.requestTimeout = limits.requestTimeoutMs ?? METRICS_REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(Object.assign(error, { port })));
    server.listen(port, host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
