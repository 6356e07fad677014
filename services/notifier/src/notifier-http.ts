import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Bus } from '@gpualert/bus';
import { processMetrics, ReloadMetrics } from '@gpualert/runtime';
import type { StateStore } from '@gpualert/state';
import { exportTimeline, FORMATS, UnknownIncidentError, type Format } from '@gpualert/timeline';
import { Counter, Gauge, Registry } from 'prom-client';
import { z } from 'zod';
import type { RoutesFile } from '@gpualert/notify';
import {
  alertQuery,
  deleteSilence,
  getSilence,
  listAlertGroups,
  listAlerts,
  listSilences,
  MAX_ALERTS_BODY_BYTES,
  postAlerts,
  postSilence,
  receivers,
  status,
  type NotifierView,
} from './alertmanager-api.ts';
import { makeSilence } from './silence-guard.ts';
import { expireSilence, loadSilences, SilenceError } from './silences.ts';
import { GpualertError } from '@gpualert/schema';
import type { FleetSource } from '@gpualert/schema';
import { decideAction, listActions } from './console/console-actions.ts';
import { consoleRoute, serveConsole } from './console/console-http.ts';
import { firstIssue } from './first-issue.ts';

/** Same floor as the intake's: 16 characters is ~96 bits from a random generator, out of reach of guessing over HTTP. */
export const MIN_TOKEN_LENGTH = 16;
/** A silence is a few hundred bytes; 64 KiB takes 32 long regex matchers with room to spare and caps what one request costs. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Headers arrive in one round trip; 10 s forgives a slow link and cuts a slowloris off early. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** A whole request (64 KiB at most) in 30 s even over a poor link; longer is a client holding a socket. */
export const REQUEST_TIMEOUT_MS = 30_000;

export class NotifierConfigError extends GpualertError {
  constructor(message: string) {
    super('GA-NOTIFIER-CONFIG-INVALID', message);
  }
}

/** The notifier's Prometheus metrics. */
/** What a reload (SIGHUP, POST /-/reload) came to: the routes in use, or why the file was kept out. */
export type ReloadResult =
  { readonly ok: true; readonly kept: number; readonly moved: number; readonly groups: number } | { readonly ok: false; readonly errors: readonly string[] };

export class NotifierMetrics {
  readonly registry = new Registry();
  /** Whether the last routes reload took (SIGHUP, POST /-/reload). */
  private readonly reloads = new ReloadMetrics(this.registry, 'routes and templates');

  constructor() {
    this.reloaded(true);
  }

  /** A load (at start) or a reload, and whether it took. */
  reloaded(ok: boolean, at = Date.now()): void {
    this.reloads.reloaded(ok, at);
  }

  /** Named after Alertmanager's alertmanager_cluster_members and alertmanager_peer_position. */
  readonly clusterMembers = new Gauge({
    name: 'gpualert_notifier_cluster_members',
    help: 'Live replicas of the notifier cluster, this one included (1 for a notifier run alone).',
    registers: [this.registry],
  });
  readonly peerPosition = new Gauge({
    name: 'gpualert_notifier_peer_position',
    help: "This replica's position in the notifier cluster: it waits position × peer timeout before sending what no replica before it sent.",
    registers: [this.registry],
  });

  readonly notifications = new Counter({
    name: 'gpualert_notifier_notifications_total',
    help: 'Delivery attempts and decisions by receiver and outcome (sent, failed, suppressed, dead_lettered).',
    labelNames: ['receiver', 'outcome'] as const,
    registers: [this.registry],
  });
  /** Labelled by route template and a known method, never by the raw path: random paths add no series. */
  readonly requests = new Counter({
    name: 'gpualert_notifier_http_requests_total',
    help: 'HTTP requests to the notifier by route template, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
}

export interface NotifierServerLimits {
  readonly maxBodyBytes: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
}

const METHODS = new Set(['GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS']);

/** The route template a path belongs to; anything else is `other`. */
export function routeTemplate(pathname: string): string {
  const page = consoleRoute(pathname);
  if (page) return page;
  if (pathname === '/healthz' || pathname === '/readyz' || pathname === '/metrics' || pathname === '/v1/silences' || pathname === '/v1/timeline')
    return pathname;
  if (/^\/v1\/silences\/[\w-]+$/.test(pathname)) return '/v1/silences/{id}';
  if (pathname === '/v1/actions') return pathname;
  if (/^\/v1\/actions\/[^/]+$/.test(pathname)) return '/v1/actions/{id}';
  if (
    ['/api/v2/alerts', '/api/v2/alerts/groups', '/api/v2/silences', '/api/v2/status', '/api/v2/receivers', '/-/healthy', '/-/ready', '/-/reload'].includes(
      pathname,
    )
  )
    return pathname;
  if (/^\/api\/v2\/silence\/[\w-]+$/.test(pathname)) return '/api/v2/silence/{id}';
  return 'other';
}

/** A token shorter than the floor is refused: one line naming the variable. */
export function checkNotifierToken(token: string | undefined, variable = 'GPUALERT_NOTIFIER_TOKEN'): string | undefined {
  if (token === undefined || token === '') return undefined;
  if (token.length < MIN_TOKEN_LENGTH) throw new NotifierConfigError(`${variable} must be at least ${MIN_TOKEN_LENGTH} characters (got ${token.length})`);
  // A header value loses its surrounding white space on the way in: such a token could never be presented.
  if (/^\s|\s$|[\r\n]/.test(token))
    throw new NotifierConfigError(`${variable} must not start or end with white space, nor hold a line break (no request could present it)`);
  return token;
}

function authorized(header: string | undefined, token: string): boolean {
  const offered = Buffer.from(header?.startsWith('Bearer ') ? header.slice(7) : '');
  const expected = Buffer.from(token);
  return offered.length === expected.length && timingSafeEqual(offered, expected);
}

const SilenceBody = z.object({
  matchers: z.array(z.string()).min(1, 'a silence needs at least one matcher'),
  duration_seconds: z.number({ error: 'duration_seconds must be a number of seconds' }),
  created_by: z.string({ error: 'created_by must be a non-empty string' }),
  comment: z.string({ error: 'comment must be a non-empty string' }),
  /** Make it even when it reaches more than half of what is firing, across hosts (silence-guard.ts). */
  force: z.boolean({ error: 'force must be true or false' }).optional(),
});

class BodyTooLarge extends Error {}

/** The body, refused by its declared length before any byte is read, and cut off when it runs past the limit. */
async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `GET/POST /v1/silences`, `DELETE /v1/silences/{id}` and `GET /v1/timeline` behind a bearer
 * token, `/metrics`, `/healthz`, and Alertmanager's v2 API (its alert list read from `view`, the
 * running notifier's state). Without a token configured the API refuses everything.
 */
export function createNotifierServer(
  store: StateStore,
  metrics: NotifierMetrics,
  token: string | undefined,
  bus?: Bus,
  limits: Partial<NotifierServerLimits> = {},
  routes?: RoutesFile,
  view?: NotifierView,
  fleet?: FleetSource,
  reload?: () => Promise<ReloadResult>,
): Server {
  const apiToken = checkNotifierToken(token);
  const maxBody = limits.maxBodyBytes ?? MAX_BODY_BYTES;
  const server = createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://notifier');
    const route = routeTemplate(url.pathname);
    const method = req.method !== undefined && METHODS.has(req.method) ? req.method : 'other';
    const send = (status: number, body: unknown, type = 'application/json', close = false) => {
      if (res.headersSent) return;
      metrics.requests.inc({ route, method, status: String(status) });
      res.writeHead(status, { 'content-type': type, ...(close ? { connection: 'close' } : {}) });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    void (async () => {
      // Liveness: the event loop answered. Readiness: what the notifier needs answers (the reason when not).
      if (url.pathname === '/healthz') return send(200, { status: 'ok' });
      if (url.pathname === '/readyz' || url.pathname === '/-/ready') {
        const state = view?.ready ? await view.ready() : { ready: true, checks: {} };
        if (url.pathname === '/-/ready') return send(state.ready ? 200 : 503, state.ready ? 'OK' : `not ready: ${JSON.stringify(state.checks)}`, 'text/plain');
        return send(state.ready ? 200 : 503, { status: state.ready ? 'ready' : 'not ready', checks: state.checks });
      }
      if (url.pathname === '/metrics')
        return send(200, `${await metrics.registry.metrics()}${await processMetrics('gpualert_notifier_').metrics()}`, 'text/plain; version=0.0.4');
      if (url.pathname === '/-/healthy') return send(200, 'OK', 'text/plain');
      // Alertmanager's reload, behind the bearer token: the routes file read again; a bad one is refused with its file:line, the running routes kept.
      if (url.pathname === '/-/reload') {
        if (req.method !== 'POST') return send(405, { error: 'POST /-/reload' });
        if (!apiToken || !authorized(req.headers.authorization, apiToken)) return send(401, { error: 'a bearer token is required' });
        if (!reload) return send(501, { error: 'this notifier has no routes file to reload' });
        const result = await reload();
        return result.ok
          ? send(200, { status: 'reloaded', kept: result.kept, moved: result.moved, groups: result.groups })
          : send(400, { error: 'the configuration was not reloaded', errors: result.errors });
      }
      // The live console: its page, its assets, and the fleet and alerts it draws (src/console/).
      const page =
        consoleRoute(url.pathname) &&
        (await serveConsole(req, res, url, { view, fleet, authorized: !!apiToken && authorized(req.headers.authorization, apiToken) }));
      if (page) return send(page.status, page.body, page.type);
      if (url.pathname.startsWith('/api/v2/')) {
        // Alertmanager's API, behind the same bearer token (amtool --http.config.file, Prometheus' alerting.authorization).
        if (!apiToken || !authorized(req.headers.authorization, apiToken)) return send(401, { code: 401, message: 'a bearer token is required' });
        const now = Date.now();
        const answer = async (work: Promise<{ status: number; body: unknown }>) => {
          const r = await work;
          return send(r.status, typeof r.body === 'string' && r.status !== 200 ? JSON.stringify(r.body) : r.body);
        };
        const json = async (limit: number): Promise<unknown> => {
          const text = await readBody(req, limit);
          const parsed: unknown = JSON.parse(text);
          return parsed;
        };
        try {
          if (url.pathname === '/api/v2/alerts' && req.method === 'POST') {
            if (!bus) return send(503, { code: 503, message: 'no bus to publish alerts to' });
            return await answer(postAlerts(bus, await json(MAX_ALERTS_BODY_BYTES), now));
          }
          if ((url.pathname === '/api/v2/alerts' || url.pathname === '/api/v2/alerts/groups') && req.method === 'GET') {
            if (!view) return send(503, { code: 503, message: 'this server runs without a notifier: there is no alert list to show' });
            const query = alertQuery(url.searchParams);
            if (typeof query === 'string') return send(400, JSON.stringify(query));
            return send(200, url.pathname === '/api/v2/alerts' ? listAlerts(view, query, now) : listAlertGroups(view, query, now));
          }
          if (url.pathname === '/api/v2/silences' && req.method === 'GET') return await answer(listSilences(store, url.searchParams.getAll('filter'), now));
          if (url.pathname === '/api/v2/silences' && req.method === 'POST') return await answer(postSilence(store, await json(maxBody), now));
          const id = /^\/api\/v2\/silence\/([\w-]+)$/.exec(url.pathname)?.[1];
          if (id !== undefined && req.method === 'GET') return await answer(getSilence(store, id, now));
          if (id !== undefined && req.method === 'DELETE') return await answer(deleteSilence(store, id, now));
          if (url.pathname === '/api/v2/status' && req.method === 'GET') return send(200, status(view?.routes ?? routes, '0.25.0-gpualert', view?.cluster?.()));
          if (url.pathname === '/api/v2/receivers' && req.method === 'GET') return send(200, receivers(view?.routes ?? routes));
          return send(404, { code: 404, message: `no ${req.method ?? ''} ${url.pathname}` });
        } catch (error) {
          if (error instanceof BodyTooLarge) return send(413, { code: 413, message: 'the body is too large' }, 'application/json', true);
          if (error instanceof SyntaxError) return send(400, { code: 400, message: 'the body is not JSON' });
          throw error;
        }
      }
      if (!url.pathname.startsWith('/v1/silences') && url.pathname !== '/v1/timeline' && !url.pathname.startsWith('/v1/actions'))
        return send(404, { error: 'not_found' });
      if (!apiToken || !authorized(req.headers.authorization, apiToken)) return send(401, { error: 'unauthorized', message: 'a bearer token is required' });
      // Remediation actions (issue 29): the console lists them and a person approves or denies one.
      if (url.pathname.startsWith('/v1/actions')) {
        if (!bus) return send(503, { error: 'no_bus', message: 'this server has no bus to read gpualert.actions from' });
        if (url.pathname === '/v1/actions')
          return req.method === 'GET' ? send(200, (await listActions(bus, Date.now())).body) : send(405, { error: 'method_not_allowed' });
        const actionId = /^\/v1\/actions\/([\w.:-]{1,128})$/.exec(url.pathname)?.[1];
        if (actionId === undefined) return send(404, { error: 'not_found', message: 'an action id is letters, digits, -, _, ., : (at most 128)' });
        if (req.method !== 'POST') return send(405, { error: 'method_not_allowed', message: 'POST a decision' });
        let body: unknown;
        try {
          body = JSON.parse(await readBody(req, maxBody));
        } catch (error) {
          if (error instanceof BodyTooLarge)
            return send(413, { error: 'body_too_large', message: `the body is over ${maxBody} bytes` }, 'application/json', true);
          return send(400, { error: 'malformed_json', message: 'the body is not JSON' });
        }
        const decided = await decideAction(bus, store, actionId, body, Date.now());
        return send(decided.status, decided.body);
      }
      if (req.method === 'GET' && url.pathname === '/v1/timeline') {
        if (!bus) return send(404, { error: 'not_found', message: 'no bus to read the timeline from' });
        const q = url.searchParams;
        const from = Date.parse(q.get('from') ?? '');
        const to = Date.parse(q.get('to') ?? '');
        const format = (q.get('format') ?? 'json') as Format;
        if (Number.isNaN(from) || Number.isNaN(to) || from >= to)
          return send(400, { error: 'bad_range', message: 'from and to must be ISO-8601 times, from before to' });
        if (!FORMATS.includes(format)) return send(400, { error: 'bad_format', message: `format must be one of ${FORMATS.join(', ')}` });
        const host = q.get('host');
        const incident = q.get('incident');
        try {
          const { text } = await exportTimeline(bus, { from, to, format, ...(host ? { host } : {}), ...(incident ? { incident } : {}) });
          const types: Record<Format, string> = {
            json: 'application/json',
            md: 'text/markdown; charset=utf-8',
            csv: 'text/csv; charset=utf-8',
            html: 'text/html; charset=utf-8',
          };
          return send(200, text, types[format]);
        } catch (error) {
          if (error instanceof UnknownIncidentError) return send(404, { error: 'unknown_incident', message: error.message });
          throw error;
        }
      }
      if (req.method === 'GET' && url.pathname === '/v1/silences') return send(200, { silences: Object.values(await loadSilences(store)) });
      if (req.method === 'POST' && url.pathname === '/v1/silences') {
        let text: string;
        try {
          text = await readBody(req, maxBody);
        } catch (error) {
          if (error instanceof BodyTooLarge)
            return send(413, { error: 'body_too_large', message: `the body is over ${maxBody} bytes` }, 'application/json', true);
          throw error;
        }
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          return send(400, { error: 'malformed_json', message: 'the body is not JSON' });
        }
        const body = SilenceBody.safeParse(json);
        if (!body.success) return send(400, { error: 'invalid_silence', message: firstIssue(body.error, 'body') });
        try {
          const b = body.data;
          const { silence, reach } = await makeSilence(
            store,
            { matchers: b.matchers, durationMs: b.duration_seconds * 1000, createdBy: b.created_by, comment: b.comment },
            Date.now(),
            b.force === true,
          );
          return send(201, { ...silence, reach });
        } catch (error) {
          if (error instanceof SilenceError) return send(400, { error: 'invalid_silence', message: error.message });
          throw error;
        }
      }
      const id = /^\/v1\/silences\/([\w-]+)$/.exec(url.pathname)?.[1];
      if (req.method === 'DELETE' && id !== undefined) {
        const silence = await expireSilence(store, id, Date.now());
        return silence ? send(200, silence) : send(404, { error: 'not_found', message: `no silence ${id}` });
      }
      return send(405, { error: 'method_not_allowed' });
    })().catch(() => send(500, { error: 'internal' }));
  });
  server.headersTimeout = limits.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  server.requestTimeout = limits.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  return server;
}
