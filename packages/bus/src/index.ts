export * from './bus.ts';
export { MemoryBus, type MemoryBusOptions } from './memory-bus.ts';
export { KafkaBus, type KafkaBusOptions } from './kafka-bus.ts';
export { partitionFor } from './partition-for.ts';
export { RetriableError, isInfrastructureError } from './infrastructure-error.ts';
export { PIPELINE_HOST, PIPELINE_RULE, pipelineAlert, pipelineFingerprint, raisePipelineAlert } from './pipeline-alert.ts';
export { BUS_METRICS, deadletterMessages } from './bus-metrics.ts';
export { MAX_ALONE_ATTEMPTS, MAX_HANDLER_ATTEMPTS, MAX_DEADLETTER_REASON_CHARS } from './retry-batch.ts';
export { deadletterOf } from './process-batch.ts';
