export { buildTimeline, type Timeline } from './timeline.ts';
export { FORMATS, render, type Format } from './formats.ts';
export { exportTimeline, UnknownIncidentError } from './export-timeline.ts';
export { exportEvidence } from './evidence/export-evidence.ts';
export type { GpuSelector } from './evidence/evidence.ts';
