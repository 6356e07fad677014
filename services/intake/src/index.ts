export * from './standard-webhooks.ts';
export * from './handle-delivery.ts';
export * from './intake-metrics.ts';
export * from './intake-server.ts';
export * from './inventory-hosts.ts';
export * from './intake-config.ts';
export * from './intake-service.ts';
export * from './deliveries/index.ts';
