export * from './times.ts';
export * from './adapter.ts';
export * from './adapters.ts';
export { GenericEvent } from './generic.ts';
export { azureHealthAdapter, MAX_AZURE_ALERT_TARGETS } from './azure-health.ts';
export { detectProvider } from './detect-provider.ts';
