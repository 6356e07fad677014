import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/** Paths whose values never reach a log line: credentials, signing secrets, auth headers. */
export const REDACTED_PATHS = [
  'password', 'secret', 'secrets', 'token', 'apiKey', 'routingKey', 'routing_key', 'authorization',
  '*.password', '*.secret', '*.secrets', '*.token', '*.apiKey', '*.routingKey', '*.routing_key', '*.authorization',
  '*.*.password', '*.*.secret', '*.*.token', '*.*.routing_key',
  'headers.authorization', 'headers.cookie', 'headers["webhook-signature"]', 'req.headers.authorization',
  'redisUrl', '*.redisUrl',
];

export interface LoggerSettings {
  readonly name: string;
  readonly level?: string;
  /** Where lines go; stderr by default so stdout stays free for command output (JSONL). */
  readonly destination?: NodeJS.WritableStream;
}

/** One logger per service: JSON lines, an event name in snake_case plus a structured object. */
export function createLogger(settings: LoggerSettings): Logger {
  const options: LoggerOptions = {
    name: settings.name,
    level: settings.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: { service: settings.name },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(options, (settings.destination ?? process.stderr) as pino.DestinationStream);
}
