export * from './load-config.ts';
export * from './common.ts';
