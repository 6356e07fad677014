export * from './delivery.ts';
export * from './silences.ts';
export * from './notifier-service.ts';
