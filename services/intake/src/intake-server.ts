import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from '@gpualert/log';
import { handleDelivery, type IntakeDeps, type IntakeResponse } from './handle-delivery.ts';
import { IntakeMetrics } from './intake-metrics.ts';

export interface IntakeServerOptions extends IntakeDeps {
  readonly log: Logger;
  /** Bodies above this are refused with 413 before they are read whole. */
  readonly maxBodyBytes: number;
}

const ROUTE = /^\/v1\/events\/([A-Za-z0-9-]+)\/?$/;

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

/** `POST /v1/events/{provider}`, `GET /healthz`, `GET /metrics`. */
export function createIntakeServer(options: IntakeServerOptions): { server: Server; metrics: IntakeMetrics } {
  const metrics = new IntakeMetrics();
  const server = createServer((request, response) => {
    const started = process.hrtime.bigint();
    const finish = (result: Pick<IntakeResponse, 'status' | 'body' | 'headers' | 'outcome'>, provider: string) => {
      metrics.requests.inc({ provider, outcome: result.outcome });
      metrics.duration.observe({ outcome: result.outcome }, Number(process.hrtime.bigint() - started) / 1e9);
      send(response, result.status, result.body, result.headers);
    };
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://intake');
      if (request.method === 'GET' && url.pathname === '/healthz') return send(response, 200, { status: 'ok' });
      if (request.method === 'GET' && url.pathname === '/metrics') return send(response, 200, await metrics.registry.metrics());
      const route = ROUTE.exec(url.pathname);
      if (!route) return send(response, 404, { error: 'not_found', message: `no route for ${request.method} ${url.pathname}` });
      const provider = route[1]!;
      if (request.method !== 'POST') {
        return finish({ status: 405, outcome: 'method_not_allowed', body: { error: 'method_not_allowed', message: 'use POST' }, headers: { allow: 'POST' } }, provider);
      }
      const type = String(request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/json' && !type.endsWith('+json')) {
        request.resume();
        return finish({ status: 415, outcome: 'unsupported_media_type', body: { error: 'unsupported_media_type', message: `expected application/json, got "${type || 'nothing'}"` } }, provider);
      }
      let body: Buffer;
      try {
        body = await readBody(request, options.maxBodyBytes);
      } catch (error) {
        if (error instanceof TooLarge) {
          response.setHeader('connection', 'close');
          return finish({ status: 413, outcome: 'too_large', body: { error: 'payload_too_large', message: `the body is larger than ${options.maxBodyBytes} bytes` } }, provider);
        }
        throw error;
      }
      const result = await handleDelivery({ provider, headers: request.headers, body }, options);
      if (result.events) metrics.events.inc({ provider }, result.events);
      if (result.status >= 500) options.log.warn({ provider, status: result.status, message: result.body.message }, 'intake_delivery_deferred');
      else if (result.status >= 400) options.log.info({ provider, status: result.status, message: result.body.message }, 'intake_delivery_refused');
      finish(result, provider);
    })().catch((error: unknown) => {
      options.log.error({ error: String(error) }, 'intake_request_failed');
      if (!response.headersSent) send(response, 500, { error: 'internal', message: 'the intake failed on this request; retry' });
    });
  });
  return { server, metrics };
}
