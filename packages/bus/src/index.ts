// KafkaBus is `@gpualert/bus/kafka` (src/kafka.ts): kafkajs loads only in a process that uses Kafka.
export {
  DEADLETTER_HEADERS,
  envelopeMessage,
  type Batch,
  type BatchContext,
  type Bus,
  type ConsumedEnvelope,
  type OutgoingMessage,
  type Subscription,
} from './bus.ts';
export { MemoryBus } from './memory-bus.ts';
export { partitionFor } from './partition-for.ts';
export { RetriableError } from './infrastructure-error.ts';
export { pipelineFingerprint } from './pipeline-alert.ts';
export { BUS_METRICS, deadletterMessages } from './bus-metrics.ts';
export { MAX_ALONE_ATTEMPTS, MAX_HANDLER_ATTEMPTS } from './retry-batch.ts';
export { deadletterOf } from './process-batch.ts';
