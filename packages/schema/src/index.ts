export { ALL_TOPICS, TOPICS } from './topics.ts';
export { maxSeverity, SEVERITIES, Severity, severityRank } from './severity.ts';
export { canonicalPciBus } from './pci-bus.ts';
export { GpuMetrics, THROTTLE_REASONS, ThrottleReason, throttleReasonsFromMask } from './metrics.ts';
export {
  ALERT_CATEGORIES,
  AlertCategory,
  AlertData,
  CollectorError,
  GpuSampleData,
  HostFault,
  HostInventoryData,
  HostName,
  InventoryGpu,
  KernelEventData,
  KernelEventKind,
  KernelEventPort,
  NotificationData,
  Provider,
  PROVIDER_EVENT_KINDS,
  PROVIDER_EVENT_STATUSES,
  ProviderEventData,
  PROVIDERS,
} from './data.ts';
export { MAX_PCI_DEVICES, PciTopologyData, PciTreeDevice } from './inventory-pci.ts';
export {
  BmcEventData,
  BmcHealth,
  HostFan,
  HostPsu,
  HostRedundancy,
  HostSampleData,
  HostTemperature,
  IB_PORT_COUNTERS,
  IbPort,
  IbPortCounters,
  MAX_BMC_MESSAGE_LENGTH,
  MAX_FANS_PER_SAMPLE,
  MAX_HOST_SENSOR_NAME_LENGTH,
  MAX_IB_PORTS_PER_SAMPLE,
  MAX_PSUS_PER_SAMPLE,
  MAX_REDUNDANCY_GROUPS,
  MAX_TEMPERATURES_PER_SAMPLE,
  type IbPortCounter,
} from './host-sample.ts';
export { type TelemetrySource, type TelemetryState } from './telemetry-health.ts';
export { isJobText, JobAttribution, MAX_JOB_TEXT_LENGTH } from './job-attribution.ts';
export {
  JobEventData,
  JobEventKind,
  MAX_JOB_EVENT_FIELDS,
  MAX_JOB_FIELD_NAME_LENGTH,
  MAX_JOB_FIELD_TEXT_LENGTH,
  MAX_JOB_MESSAGE_LENGTH,
  MAX_JOB_RANK,
} from './job-event.ts';
export { AcknowledgementData, MAX_ACKNOWLEDGEMENT_TEXT_LENGTH, Pager } from './acknowledgement.ts';
export { ACTION_KINDS, ACTION_PHASES, ActionKind, MAX_ACTION_TEXT_LENGTH } from './remediation.ts';
export { MAX_USAGE_EVIDENCE, MINUTES_PER_HOUR, UsageRollupData } from './usage.ts';
export { Envelope, type EnvelopeOf } from './envelope.ts';
export { parseEnvelope, validateEnvelope } from './parse-envelope.ts';
export { newEnvelope } from './new-envelope.ts';
export { stableId } from './stable-id.ts';
export { isCanonicalGpuSample } from './gpu-sample-fast-path.ts';
export {
  eventTimeProblem,
  isGpuIndex,
  isHostName,
  MAX_EVENT_LEAD_MS,
  MAX_GPU_INDEX,
  MAX_GPUS_PER_SAMPLE,
  MAX_HOST_LENGTH,
  MAX_HOSTS_PER_PROVIDER_EVENT,
  MAX_LABEL_NAME_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
  MAX_LABELS,
} from './bounds.ts';
export { inertRecord, isInert, toInertRecord } from './inert-record.ts';
export { ERROR_CODES, errorCodeOf, GpualertError, gpualertErrorIn, isGpualertError, MAX_ERROR_CAUSE_DEPTH, type ErrorCode } from './gpualert-error.ts';
export { decodeVersioned, encodeVersioned, encodeVersionedPaced, encodeVersionedValue, savedRecord, type VersionedState } from './versioned-state.ts';
export {
  AlertView,
  BaselineBand,
  emptyMetricView,
  EventView,
  FLEET_NDJSON,
  FLEET_SNAPSHOT_VERSION,
  FleetSnapshot,
  FLEET_METRICS,
  GpuHistory,
  GpuView,
  HISTORY_STEP_MS,
  HostView,
  MaintenanceView,
  MetricHistory,
  MAX_FLEET_EVENTS,
  MAX_FLEET_HOSTS,
  MAX_FLEET_SOURCES,
  MAX_HISTORY_POINTS,
  MAX_GPU_ALERTS,
  MAX_GPU_EVENTS,
  MAX_HOST_DRIFT,
  MAX_HOST_WINDOWS,
  MAX_SHARED_HOSTS,
  MAX_VIEW_TEXT,
  MetricView,
  ViewState,
  worseState,
  type FleetMetric,
  type FleetSource,
} from './fleet-view.ts';
export { stringifyPaced } from './paced-json.ts';
export { must } from './must.ts';
