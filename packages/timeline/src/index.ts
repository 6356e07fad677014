export { buildTimeline, type Timeline } from './timeline.ts';
export { FORMATS, render, type Format } from './formats.ts';
export { exportTimeline, UnknownIncidentError } from './export-timeline.ts';
