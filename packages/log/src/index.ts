export { createLogger, defaultLogFormat, type LogFormat, type Logger } from './logger.ts';
export { redactSecrets, redactUrl } from './redact.ts';
