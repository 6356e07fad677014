export * from './logger.ts';
export * from './pretty.ts';
export * from './redact.ts';
