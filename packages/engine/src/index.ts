export { loadRuleSet, type RuleSet } from './load-rules.ts';
export {
  dict, emptyEngineState, emptyFleetState, newHostState, parseFleetState, parseHostState, type EngineState, type HostState,
} from './engine-state.ts';
export { ENGINE_STATE_VERSION } from './engine-state-schema.ts';
export { ENGINE_SOURCE } from './alert-envelopes.ts';
export { Engine } from './engine.ts';
export { RecordingError, replay } from './replay.ts';
export { StreamClock } from './time-policy.ts';
export { renderFleetMetrics, renderFleetMetricsCounted, type FleetMetricsInput } from './fleet-metrics.ts';
export { ENGINE_FLEET_KEY, ENGINE_FLEET_SHARES_KEY, engineHostKey, enginePartitionKey } from './store-keys.ts';
export { DEFAULT_FORGET_AFTER_MS, forgetHost, hostsToForget, parseForgetAfter } from './forget-hosts.ts';
export { buildFleetSnapshot, storeFleetSource, type LatestGpuSample } from './fleet-snapshot.ts';
export { MAX_SHARE_CHARS, SharedView, shareOf } from './fleet-shares.ts';
