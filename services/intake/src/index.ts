export { sign } from './standard-webhooks.ts';
export { handleDelivery, type IntakeDeps } from './handle-delivery.ts';
export { createIntakeServer } from './intake-server.ts';
export { INTAKE_SOURCES, IntakeConfig, intakeSecretsFile } from './intake-config.ts';
export { startIntake } from './intake-service.ts';
export { KEY_SERVER_RETRY_AFTER_S } from './deliveries/provider-fetch.ts';
export { snsStringToSign } from './deliveries/sns-delivery.ts';
