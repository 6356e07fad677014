import { GpualertError, isGpualertError, MAX_ERROR_CAUSE_DEPTH } from '@gpualert/schema';

/**
 * An error a handler throws when something it depends on is away (Kafka, Redis, a store): the
 * consumer retries the batch without limit instead of dead-lettering its messages.
 */
export class RetriableError extends GpualertError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('GA-INFRA-UNAVAILABLE', message, { retriable: true, ...(options?.cause === undefined ? {} : { cause: options.cause }) });
  }
}

/** Node's socket and DNS failures: the peer is away, not the message bad. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ERR_SOCKET_CLOSED',
]);

/** ioredis while Redis is away or restarting, and Redis's own "not now" replies. */
const REDIS_UNAVAILABLE =
  /^(?:Connection is closed|Stream isn't writeable|Reached the max retries per request limit|(?:LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY)\b)/;

/**
 * Whether an error thrown by a handler means the infrastructure is away rather than the message
 * bad, followed down its chain of causes: a GpualertError decides by its own `retriable` (the
 * thrower knew; a non-retriable one is dead-lettered whatever it wraps); before one, an error that
 * says `retriable: true` (KafkaJS errors), any KafkaJS error (a handler reaches Kafka only through
 * the bus, so a Kafka error is an outage), a socket failure, or ioredis's connection errors.
 */
export function isInfrastructureError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < MAX_ERROR_CAUSE_DEPTH && typeof current === 'object' && current !== null; depth += 1) {
    if (isGpualertError(current)) return current.retriable;
    const e = current as { retriable?: unknown; name?: unknown; code?: unknown; message?: unknown; cause?: unknown };
    if (e.retriable === true) return true;
    if (typeof e.name === 'string' && (e.name.startsWith('KafkaJS') || e.name === 'MaxRetriesPerRequestError')) return true;
    if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
    if (typeof e.message === 'string' && REDIS_UNAVAILABLE.test(e.message)) return true;
    current = e.cause;
  }
  return false;
}
