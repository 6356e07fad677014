import { pino, type Logger, type LoggerOptions } from 'pino';
import { prettyDestination } from './pretty.ts';
import { redactSecrets } from './redact.ts';

export type { Logger };

/** Paths whose values never reach a log line: credentials, signing secrets, auth headers. */
export const REDACTED_PATHS = [
  'password',
  'secret',
  'secrets',
  'token',
  'apiKey',
  'routingKey',
  'routing_key',
  'authorization',
  '*.password',
  '*.secret',
  '*.secrets',
  '*.token',
  '*.apiKey',
  '*.routingKey',
  '*.routing_key',
  '*.authorization',
  '*.*.password',
  '*.*.secret',
  '*.*.token',
  '*.*.routing_key',
  'headers.authorization',
  'headers.cookie',
  'headers["webhook-signature"]',
  'req.headers.authorization',
  'redisUrl',
  '*.redisUrl',
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

/** Top-level string values and error messages of a log line, through `redactSecrets`. */
function redactStrings(object: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(object)) {
    const value = object[key];
    const text = typeof value === 'string' ? value : value instanceof Error ? `${value.name}: ${value.message}` : undefined;
    if (text === undefined) continue;
    const clean = redactSecrets(text);
    if (clean === value) continue;
    out ??= { ...object };
    out[key] = clean;
  }
  return out ?? object;
}

/** Readable lines on a terminal, JSON everywhere else (files, pipes, journald, containers). */
export function defaultLogFormat(stream: NodeJS.WritableStream = process.stderr): LogFormat {
  return 'isTTY' in stream && stream.isTTY === true ? 'pretty' : 'json';
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
    // Paths catch secrets in known places; free text (an error message quoting a webhook URL, a
    // broker list with a password) is redacted as text.
    formatters: { log: redactStrings },
  };
  const destination = settings.destination ?? process.stderr;
  const sink = settings.format === 'pretty' ? prettyDestination(destination) : destination;
  return pino(options, sink);
}
