import { Counter, Histogram, Registry } from 'prom-client';

/** The intake's Prometheus metrics, one registry per server. */
export class IntakeMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'gpualert_intake_requests_total',
    help: 'Intake requests by provider and outcome (accepted, duplicate, unauthorized, malformed, …).',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'gpualert_intake_request_duration_seconds',
    help: 'Time from request to answer, Kafka acks included.',
    labelNames: ['outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: 'gpualert_intake_provider_events_total',
    help: 'provider.event envelopes published.',
    labelNames: ['provider'] as const,
    registers: [this.registry],
  });
}
