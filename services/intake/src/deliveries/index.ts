export * from './delivery-protocol.ts';
export * from './provider-fetch.ts';
export * from './handle-protocol-delivery.ts';
export { SNS_HOST, snsStringToSign } from './sns-delivery.ts';
export { GOOGLE_JWKS_URL, JWT_CLOCK_SKEW_S, MAX_JWT_CHARS, JWKS_REFRESH_MIN_MS } from './pubsub-delivery.ts';
export { OCI_NOTIFICATION_HOST } from './oci-delivery.ts';
export { MAX_EVENTGRID_BATCH } from './eventgrid-delivery.ts';
