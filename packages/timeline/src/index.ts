export * from './timeline.ts';
export * from './formats.ts';
export * from './export-timeline.ts';
