export * from './delivery.ts';
export * from './silences.ts';
export * from './silence-guard.ts';
export * from './notifier-service.ts';
export * from './notifier-http.ts';
export * from './alertmanager-api.ts';
export * from './console/index.ts';
export * from './notifier-state-store.ts';
