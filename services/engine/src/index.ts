export * from './engine-service.ts';
export * from './engine-metrics.ts';
export * from './host-forgetting.ts';
