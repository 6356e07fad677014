export * from './times.ts';
export * from './adapter.ts';
export * from './adapters.ts';
export { GenericEvent } from './generic.ts';
