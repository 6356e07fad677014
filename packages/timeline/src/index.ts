export * from './timeline.ts';
export * from './formats.ts';
