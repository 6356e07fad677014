export * from './job-patterns.ts';
export * from './match-job-line.ts';
export * from './job-collector.ts';
export * from './command-job-source.ts';
