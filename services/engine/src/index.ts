export * from './engine-service.ts';
