import { createServer, type Server } from 'node:http';
import { BUS_METRICS } from '@gpualert/bus';
import { renderFleetMetrics, type EngineState, type FleetMetricsInput, type RuleSet } from '@gpualert/engine';
import { TOPICS, type GpuSampleData } from '@gpualert/schema';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** `gpualert engine`'s port for `/metrics` and `/healthz` (docs/architecture.md, "Ports"). */
export const DEFAULT_ENGINE_PORT = 9470;

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
  readonly renderDuration = new Histogram({
    name: 'gpualert_engine_metrics_render_seconds',
    help: 'Time to render the fleet metrics for one scrape.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });
  /** Each owned host's latest sample: the state keeps no raw values. */
  private readonly samples = new Map<string, GpuSampleData>();
  private state: EngineState | undefined;

  constructor(private readonly ruleSet: RuleSet, private readonly prices?: FleetMetricsInput['prices']) {
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
  }

  async render(): Promise<string> {
    const started = performance.now();
    let fleet = '';
    if (this.state) {
      for (const host of this.samples.keys()) if (this.state.hosts[host] === undefined) this.samples.delete(host);
      fleet = renderFleetMetrics({ state: this.state, ruleSet: this.ruleSet, samples: this.samples, ...(this.prices ? { prices: this.prices } : {}) });
    }
    this.renderDuration.observe((performance.now() - started) / 1000);
    return `${fleet}${await this.registry.metrics()}${await BUS_METRICS.metrics()}`;
  }
}

/** `GET /metrics` and `GET /healthz` on `port` (0 picks a free one); resolves once listening. */
export async function startEngineMetricsServer(metrics: EngineMetrics, port: number, host = '0.0.0.0'): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method === 'GET' && path === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (request.method === 'GET' && path === '/metrics') {
      metrics.render().then(
        (text) => response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(text),
        (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(error)}\n`),
      );
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics or /healthz\n');
  });
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
