export * from './matchers.ts';
export * from './alert-labels.ts';
export * from './route-config.ts';
export * from './routing.ts';
export * from './notifier-core.ts';
export * from './load-routes.ts';
