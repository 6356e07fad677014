import { busReady, processMetrics, sharedReadiness, storeReady } from '@gpualert/runtime';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { BUS_METRICS } from '@gpualert/bus';
import { redactSecrets, type Logger } from '@gpualert/log';
import { Provider } from '@gpualert/schema';
import { handleDelivery, type IntakeDeps, type IntakeResponse } from './handle-delivery.ts';
import { handleJobEvents } from './handle-job-events.ts';
import { handlePagerWebhook } from './pager/handle-pager-webhook.ts';
import { IntakeMetrics } from './intake-metrics.ts';
import { createDeliveryRuntime, DELIVERY_PROTOCOLS, type DeliveriesConfig, type DeliveryProtocol } from './deliveries/delivery-protocol.ts';
import { handleProtocolDelivery, PROTOCOL_METHODS } from './deliveries/handle-protocol-delivery.ts';

/** A sender writes its headers at once: 10 s covers a slow link and cuts off a client that dribbles them. */
export const INTAKE_HEADERS_TIMEOUT_MS = 10_000;
/** Headers and body: a body at the 256 KB limit takes under a second on a slow link; 30 s is generous. */
export const INTAKE_REQUEST_TIMEOUT_MS = 30_000;
/** An idle kept-alive connection is closed after this: senders reconnect cheaply, idle sockets cost descriptors. */
export const INTAKE_KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** How often Node checks for requests past their timeouts (its default, 30 s, would let them run that much longer). */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

export interface IntakeServerOptions extends IntakeDeps {
  readonly log: Logger;
  /** Bodies above this are refused with 413 before they are read whole. */
  readonly maxBodyBytes: number;
  /** Default INTAKE_HEADERS_TIMEOUT_MS. */
  readonly headersTimeoutMs?: number;
  /** Default INTAKE_REQUEST_TIMEOUT_MS. */
  readonly requestTimeoutMs?: number;
  /** The providers' own delivery protocols (`/v1/deliveries/{protocol}`); none allowed when absent. */
  readonly deliveries?: DeliveriesConfig;
  /** PagerDuty v3 webhook signing secrets (`/v1/pager/pagerduty`); none: PagerDuty's webhooks are refused. */
  readonly pagerdutySecrets?: readonly string[];
  /** `/v1/pager/opsgenie`'s own tokens; none: the intake's token (PagerDeps). */
  readonly opsgenieTokens?: readonly string[];
}

const ROUTE = /^\/v1\/events\/([A-Za-z0-9-]+)\/?$/;
const JOB_EVENTS_ROUTE = /^\/v1\/job-events\/?$/;
const PAGER_ROUTE = /^\/v1\/pager\/([A-Za-z0-9-]+)\/?$/;
const DELIVERY_ROUTE = /^\/v1\/deliveries\/([A-Za-z0-9-]+)\/?$/;
const isProtocol = (name: string): name is DeliveryProtocol => (DELIVERY_PROTOCOLS as readonly string[]).includes(name);

class TooLarge extends Error {}

function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new TooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new TooLarge());
        request.pause();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, body: Record<string, unknown> | string, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/plain; version=0.0.4; charset=utf-8' : 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

type Refusal = Pick<IntakeResponse, 'status' | 'body' | 'outcome'>;

/**
 * A request's body when it is JSON (or one of `alsoTypes`) within the size bound, else the answer
 * that refuses it. `alsoTypes` undefined: any type (a handshake without a JSON body). A refused
 * body is never read: the connection closes instead.
 */
async function jsonBody(
  request: IncomingMessage,
  response: ServerResponse,
  maxBytes: number,
  alsoTypes: readonly string[] | undefined,
): Promise<Buffer | Refusal> {
  const [mediaType = ''] = String(request.headers['content-type'] ?? '').split(';');
  const type = mediaType.trim().toLowerCase();
  if (alsoTypes && type !== 'application/json' && !type.endsWith('+json') && !alsoTypes.includes(type)) {
    response.setHeader('connection', 'close');
    return {
      status: 415,
      outcome: 'unsupported_media_type',
      body: { error: 'unsupported_media_type', message: `expected application/json, got "${type.slice(0, 100) || 'nothing'}"` },
    };
  }
  try {
    return await readBody(request, maxBytes);
  } catch (error) {
    if (!(error instanceof TooLarge)) throw error;
    response.setHeader('connection', 'close');
    return { status: 413, outcome: 'too_large', body: { error: 'payload_too_large', message: `the body is larger than ${maxBytes} bytes` } };
  }
}

/** One log line for what a delivery came to: a warning for hostless events, a deferral or a refusal. */
function logOutcome(log: Logger, where: Record<string, string>, result: IntakeResponse): void {
  if (Array.isArray(result.body.warnings)) log.warn({ ...where, warnings: result.body.warnings }, 'provider_event_names_no_host');
  if (result.status >= 500) log.warn({ ...where, status: result.status, message: result.body.message }, 'intake_delivery_deferred');
  else if (result.status >= 400) log.info({ ...where, status: result.status, message: result.body.message }, 'intake_delivery_refused');
}

/** `POST /v1/events/{provider}`, `POST /v1/deliveries/{protocol}`, `POST /v1/job-events`, `POST /v1/pager/{pagerduty|opsgenie}`, `GET /healthz`, `GET /readyz`, `GET /metrics`. */
export function createIntakeServer(options: IntakeServerOptions): { server: Server; metrics: IntakeMetrics } {
  const { token } = options.auth;
  // The Opsgenie integration's token is to acknowledge only: the intake's own would open every route.
  if (token !== undefined && options.opsgenieTokens?.includes(token))
    throw new Error("GPUALERT_INTAKE_OPSGENIE_TOKENS holds the intake's own token (GPUALERT_INTAKE_TOKEN): give Opsgenie a token of its own");
  const metrics = new IntakeMetrics();
  const deliveries = createDeliveryRuntime(options.deliveries ?? { snsTopicArns: [] }, options.now);
  const requestTimeout = options.requestTimeoutMs ?? INTAKE_REQUEST_TIMEOUT_MS;
  const ready = sharedReadiness(() => [busReady(options.bus), storeReady(options.store)]);
  const server = createServer(
    {
      requestTimeout,
      headersTimeout: Math.min(requestTimeout, options.headersTimeoutMs ?? INTAKE_HEADERS_TIMEOUT_MS),
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    (request, response) => {
      const started = process.hrtime.bigint();
      const finish = (result: Pick<IntakeResponse, 'status' | 'body' | 'headers' | 'outcome'>, provider: string) => {
        metrics.requests.inc({ provider, outcome: result.outcome });
        metrics.duration.observe({ outcome: result.outcome }, Number(process.hrtime.bigint() - started) / 1e9);
        send(response, result.status, result.body, result.headers);
      };
      void (async () => {
        const url = new URL(request.url ?? '/', 'http://intake');
        // Liveness: the event loop answered. Readiness: Kafka and the store answer (what a delivery needs), the reason when not.
        if (request.method === 'GET' && url.pathname === '/healthz') return send(response, 200, { status: 'ok' });
        if (request.method === 'GET' && url.pathname === '/readyz') {
          const state = await ready();
          return send(response, state.ready ? 200 : 503, { status: state.ready ? 'ready' : 'not ready', checks: state.checks });
        }
        if (request.method === 'GET' && url.pathname === '/metrics')
          return send(response, 200, `${await metrics.registry.metrics()}${await processMetrics('gpualert_intake_').metrics()}${await BUS_METRICS.metrics()}`);
        if (JOB_EVENTS_ROUTE.test(url.pathname)) {
          if (request.method !== 'POST') {
            response.setHeader('connection', 'close');
            return finish(
              { status: 405, outcome: 'method_not_allowed', body: { error: 'method_not_allowed', message: 'use POST' }, headers: { allow: 'POST' } },
              'job-events',
            );
          }
          const body = await jsonBody(request, response, options.maxBodyBytes, []);
          if (!Buffer.isBuffer(body)) return finish(body, 'job-events');
          const result = await handleJobEvents({ headers: request.headers, body }, options);
          if (result.events) metrics.events.inc({ provider: 'job-events' }, result.events);
          logOutcome(options.log, { route: 'job-events' }, result);
          return finish(result, 'job-events');
        }
        const pager = PAGER_ROUTE.exec(url.pathname)?.[1];
        if (pager !== undefined) {
          const label = pager === 'pagerduty' || pager === 'opsgenie' ? pager : 'unknown';
          if (request.method !== 'POST') {
            response.setHeader('connection', 'close');
            return finish(
              { status: 405, outcome: 'method_not_allowed', body: { error: 'method_not_allowed', message: 'use POST' }, headers: { allow: 'POST' } },
              label,
            );
          }
          const body = await jsonBody(request, response, options.maxBodyBytes, []);
          if (!Buffer.isBuffer(body)) return finish(body, label);
          const result = await handlePagerWebhook(
            { pager, headers: request.headers, body },
            { ...options, pagerdutySecrets: options.pagerdutySecrets ?? [], opsgenieTokens: options.opsgenieTokens ?? [] },
          );
          if (result.events) metrics.events.inc({ provider: label }, result.events);
          logOutcome(options.log, { pager: label }, result);
          return finish(result, label);
        }
        const protocol = DELIVERY_ROUTE.exec(url.pathname)?.[1];
        if (protocol !== undefined) {
          if (!isProtocol(protocol))
            return send(response, 404, {
              error: 'not_found',
              message: `no delivery protocol "${protocol.slice(0, 40)}"; expected one of ${DELIVERY_PROTOCOLS.join(', ')}`,
            });
          const methods = PROTOCOL_METHODS[protocol];
          if (!methods.includes(request.method ?? '')) {
            response.setHeader('connection', 'close');
            return finish(
              {
                status: 405,
                outcome: 'method_not_allowed',
                body: { error: 'method_not_allowed', message: `use ${methods.join(' or ')}` },
                headers: { allow: methods.join(', ') },
              },
              protocol,
            );
          }
          // SNS posts its JSON as text/plain; the others say JSON (CloudEvents binary mode: the data's own type).
          const body = await jsonBody(
            request,
            response,
            options.maxBodyBytes,
            request.method === 'POST' ? (protocol === 'sns' ? ['text/plain'] : []) : undefined,
          );
          if (!Buffer.isBuffer(body)) return finish(body, protocol);
          const result = await handleProtocolDelivery(
            protocol,
            { method: request.method ?? 'POST', url, headers: request.headers, body },
            { ...options, deliveries },
          );
          if (result.events) metrics.events.inc({ provider: protocol }, result.events);
          logOutcome(options.log, { protocol }, result);
          return finish(result, protocol);
        }
        const provider = ROUTE.exec(url.pathname)?.[1];
        if (provider === undefined) return send(response, 404, { error: 'not_found', message: `no route for ${request.method} ${url.pathname}` });
        // Series per route template: the provider segment is a label only when it names a provider,
        // or every random path would make a series of its own.
        const label = Provider.safeParse(provider).success ? provider : 'unknown';
        if (request.method !== 'POST') {
          response.setHeader('connection', 'close'); // its body, if any, is not read
          return finish(
            { status: 405, outcome: 'method_not_allowed', body: { error: 'method_not_allowed', message: 'use POST' }, headers: { allow: 'POST' } },
            label,
          );
        }
        const body = await jsonBody(request, response, options.maxBodyBytes, []);
        if (!Buffer.isBuffer(body)) return finish(body, label);
        const result = await handleDelivery({ provider, headers: request.headers, body }, options);
        if (result.events) metrics.events.inc({ provider: label }, result.events);
        logOutcome(options.log, { provider }, result);
        finish(result, label);
      })().catch((error: unknown) => {
        options.log.error({ error: redactSecrets(String(error)) }, 'intake_request_failed');
        if (!response.headersSent) send(response, 500, { error: 'internal', message: 'the intake failed on this request; retry' });
      });
    },
  );
  server.keepAliveTimeout = INTAKE_KEEP_ALIVE_TIMEOUT_MS;
  return { server, metrics };
}
