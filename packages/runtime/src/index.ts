export { openInfrastructure, type Infrastructure } from './infrastructure.ts';
export type { RunningService, ServiceContext, ServiceDefinition } from './service.ts';
export { exitAfterStop, listenForStop, stopWithin, untilSignal } from './until-signal.ts';
export { embeddedDataDir } from './data-dir.ts';
export { priorityQueue, serialQueue } from './serial.ts';
export { busReady, consumerReady, sharedReadiness, storeReady, type Readiness } from './readiness.ts';
export { ReloadMetrics } from './reload-metrics.ts';
export { processMetrics } from './process-metrics.ts';
