export { ENGINE_INPUT_TOPICS, engineService, requestOperatorResolve, startEngineService, type RunningEngine } from './engine-service.ts';
export { DEFAULT_ENGINE_PORT, EngineMetrics, startEngineMetricsServer } from './engine-metrics.ts';
export { requestHostForget } from './host-forgetting.ts';
export { EngineFleetView } from './engine-fleet-view.ts';
