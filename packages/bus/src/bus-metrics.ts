import { Counter, Registry } from 'prom-client';

/**
 * The bus's Prometheus metrics, one registry per process: every consumer of every bus in it counts
 * here, and a service that serves `/metrics` merges it into its own (`Registry.merge`).
 */
export const BUS_METRICS = new Registry();

/** Dead-lettered messages by consumer group and why: `invalid` (not an envelope) or `handler_failed` (poison). */
export const deadletterMessages = new Counter({
  name: 'gpualert_deadletter_messages_total',
  help: 'Messages a consumer set aside on gpualert.deadletter, by group and reason (invalid, handler_failed).',
  labelNames: ['group', 'reason'] as const,
  registers: [BUS_METRICS],
});
