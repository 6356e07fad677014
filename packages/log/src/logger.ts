import { pino, type Logger, type LoggerOptions } from 'pino';
import { prettyDestination } from './pretty.ts';

export type { Logger };

/** Paths whose values never reach a log line: credentials, signing secrets, auth headers. */
export const REDACTED_PATHS = [
  'password', 'secret', 'secrets', 'token', 'apiKey', 'routingKey', 'routing_key', 'authorization',
  '*.password', '*.secret', '*.secrets', '*.token', '*.apiKey', '*.routingKey', '*.routing_key', '*.authorization',
  '*.*.password', '*.*.secret', '*.*.token', '*.*.routing_key',
  'headers.authorization', 'headers.cookie', 'headers["webhook-signature"]', 'req.headers.authorization',
  'redisUrl', '*.redisUrl',
];

/** `json`: one JSON object per line, for machines; `pretty`: one readable line, for a terminal. */
export type LogFormat = 'json' | 'pretty';

export interface LoggerSettings {
  /** The service the lines are about: their one `service` key. */
  readonly name: string;
  readonly level?: string;
  /** Where lines go; stderr by default so stdout stays free for command output (JSONL). */
  readonly destination?: NodeJS.WritableStream;
  /** `json` unless said otherwise; see `defaultLogFormat`. */
  readonly format?: LogFormat;
}

/** Readable lines on a terminal, JSON everywhere else (files, pipes, journald, containers). */
export function defaultLogFormat(stream: NodeJS.WritableStream = process.stderr): LogFormat {
  return (stream as { isTTY?: boolean }).isTTY === true ? 'pretty' : 'json';
}

/**
 * One logger per service: an event name in snake_case plus a structured object, with exactly one
 * `service` key. A service inside `gpualert up` gets a logger of its own from here, not a child
 * (a child's `service` binding would be a second key).
 */
export function createLogger(settings: LoggerSettings): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: { service: settings.name },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const destination = settings.destination ?? process.stderr;
  const sink = settings.format === 'pretty' ? prettyDestination(destination) : destination;
  return pino(options, sink as pino.DestinationStream);
}
