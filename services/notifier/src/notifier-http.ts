import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Bus } from '@gpualert/bus';
import type { StateStore } from '@gpualert/state';
import { exportTimeline, FORMATS, UnknownIncidentError, type Format } from '@gpualert/timeline';
import { Counter, Registry } from 'prom-client';
import { addSilence, expireSilence, loadSilences } from './silences.ts';

/** The notifier's Prometheus metrics. */
export class NotifierMetrics {
  readonly registry = new Registry();
  readonly notifications = new Counter({
    name: 'gpualert_notifier_notifications_total',
    help: 'Delivery attempts and decisions by receiver and outcome (sent, failed, suppressed, dead_lettered).',
    labelNames: ['receiver', 'outcome'] as const,
    registers: [this.registry],
  });
}

function authorized(header: string | undefined, token: string): boolean {
  const offered = Buffer.from(header?.startsWith('Bearer ') ? header.slice(7) : '');
  const expected = Buffer.from(token);
  return offered.length === expected.length && timingSafeEqual(offered, expected);
}

/**
 * `GET/POST /v1/silences`, `DELETE /v1/silences/{id}` and `GET /v1/timeline` behind a bearer
 * token, `/metrics`, `/healthz`. Without a token configured the API refuses everything.
 */
export function createNotifierServer(store: StateStore, metrics: NotifierMetrics, token: string | undefined, bus?: Bus): Server {
  return createServer((req, res) => {
    const send = (status: number, body: unknown, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://notifier');
      if (url.pathname === '/healthz') return send(200, { status: 'ok' });
      if (url.pathname === '/metrics') return send(200, await metrics.registry.metrics(), 'text/plain; version=0.0.4');
      if (!url.pathname.startsWith('/v1/silences') && url.pathname !== '/v1/timeline') return send(404, { error: 'not_found' });
      if (!token || !authorized(req.headers.authorization, token)) return send(401, { error: 'unauthorized', message: 'a bearer token is required' });
      if (req.method === 'GET' && url.pathname === '/v1/timeline') {
        if (!bus) return send(404, { error: 'not_found', message: 'no bus to read the timeline from' });
        const q = url.searchParams;
        const from = Date.parse(q.get('from') ?? '');
        const to = Date.parse(q.get('to') ?? '');
        const format = (q.get('format') ?? 'json') as Format;
        if (Number.isNaN(from) || Number.isNaN(to) || from >= to) return send(400, { error: 'bad_range', message: 'from and to must be ISO-8601 times, from before to' });
        if (!FORMATS.includes(format)) return send(400, { error: 'bad_format', message: `format must be one of ${FORMATS.join(', ')}` });
        try {
          const { text } = await exportTimeline(bus, { from, to, format, ...(q.get('host') ? { host: q.get('host')! } : {}), ...(q.get('incident') ? { incident: q.get('incident')! } : {}) });
          const types: Record<Format, string> = { json: 'application/json', md: 'text/markdown; charset=utf-8', csv: 'text/csv; charset=utf-8', html: 'text/html; charset=utf-8' };
          return send(200, text, types[format]);
        } catch (error) {
          if (error instanceof UnknownIncidentError) return send(404, { error: 'unknown_incident', message: error.message });
          throw error;
        }
      }
      if (req.method === 'GET' && url.pathname === '/v1/silences') return send(200, { silences: Object.values(await loadSilences(store)) });
      if (req.method === 'POST' && url.pathname === '/v1/silences') {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        let body: { matchers?: string[]; duration_seconds?: number; created_by?: string; comment?: string };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
        } catch {
          return send(400, { error: 'malformed_json', message: 'the body is not JSON' });
        }
        try {
          const silence = await addSilence(store, {
            matchers: body.matchers ?? [], durationMs: (body.duration_seconds ?? 0) * 1000, createdBy: body.created_by ?? '', comment: body.comment ?? '',
          }, Date.now());
          return send(201, silence);
        } catch (error) {
          return send(422, { error: 'invalid_silence', message: (error as Error).message });
        }
      }
      const one = /^\/v1\/silences\/([\w-]+)$/.exec(url.pathname);
      if (req.method === 'DELETE' && one) {
        const silence = await expireSilence(store, one[1]!, Date.now());
        return silence ? send(200, silence) : send(404, { error: 'not_found', message: `no silence ${one[1]}` });
      }
      return send(405, { error: 'method_not_allowed' });
    })().catch(() => send(500, { error: 'internal' }));
  });
}
