export type { AdapterResult } from './adapter.ts';
export { ADAPTERS } from './adapters.ts';
export { azureHealthAdapter } from './azure-health.ts';
export { detectProvider } from './detect-provider.ts';
