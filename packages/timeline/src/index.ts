export { buildTimeline, type Timeline } from './timeline.ts';
export { FORMATS, render, type Format } from './formats.ts';
export { exportTimeline, MAX_HOSTS_READ_BY_KEY, UnknownIncidentError } from './export-timeline.ts';
export { exportEvidence } from './evidence/export-evidence.ts';
export type { GpuSelector } from './evidence/evidence.ts';
