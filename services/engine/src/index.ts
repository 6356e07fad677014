export * from './engine-service.ts';
export { DEFAULT_FORGET_AFTER_MS, FORGET_REQUEST_TTL_MS, requestForgetHost } from './forget-hosts.ts';
