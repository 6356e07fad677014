import type { IncomingMessage, ServerResponse } from 'node:http';
import { isGpuIndex, isHostName, type FleetSnapshot, type FleetSource } from '@gpualert/schema';
import type { NotifierView } from '../alertmanager-api.ts';
import { alertsFleetSource } from './alerts-fleet-source.ts';
import { consoleAlertQuery, consoleAlerts } from './console-alerts.ts';
import { consoleAsset } from './console-assets.ts';
import { SharedAnswer } from './shared-answer.ts';

/** What the console's handlers need from the notifier's server. */
export interface ConsoleDeps {
  /** The running notifier (its alerts and silences markers); absent where the server runs without one. */
  readonly view?: NotifierView | undefined;
  /** The fleet: the engine's snapshot in `gpualert up`; without one, what the notifier's own alerts name. */
  readonly fleet?: FleetSource | undefined;
  /** Whether the request carried the notifier's bearer token. */
  readonly authorized: boolean;
}

export interface ConsoleAnswer {
  readonly status: number;
  readonly body: string | object;
  readonly type: string;
}

/** The page, its scripts and its data: nothing loads from elsewhere, no frame may hold it, no referrer leaves it. */
const HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** A snapshot serves every request within this long: a page refreshing every few seconds and a few people watching cost one build. */
export const SNAPSHOT_REUSE_MS = 1_000;

/** The route template of a console path (for the request counter), or undefined when the path is not the console's. */
export function consoleRoute(pathname: string): string | undefined {
  if (pathname === '/console' || pathname === '/console/') return '/console/';
  if (pathname.startsWith('/console/')) return '/console/{asset}';
  if (pathname === '/v1/fleet' || pathname === '/v1/alerts') return pathname;
  if (/^\/v1\/fleet\/[^/]+\/[^/]+$/.test(pathname)) return '/v1/fleet/{host}/{gpu}';
  return undefined;
}

const grids = new WeakMap<FleetSnapshot, object>();

/**
 * The snapshot as the grid draws it (`/v1/fleet?view=grid`): each GPU's index and state only, a
 * tenth of the bytes (1,000 hosts × 8 GPUs: about 0.3 MB instead of 4); a GPU's page fetches the rest.
 */
export function gridOf(snapshot: FleetSnapshot): object {
  let grid = grids.get(snapshot);
  if (!grid) {
    grid = { ...snapshot, hosts: snapshot.hosts.map((h) => ({ ...h, gpus: h.gpus.map((g) => ({ index: g.index, state: g.state })) })) };
    grids.set(snapshot, grid);
  }
  return grid;
}

// A build still under way serves every request (a slow engine is asked once, not once a second); a finished one for SNAPSHOT_REUSE_MS.
const snapshots = new SharedAnswer<FleetSource, FleetSnapshot>(SNAPSHOT_REUSE_MS);
const fallback = new WeakMap<NotifierView, FleetSource>();

function snapshotOf(source: FleetSource, now: number): Promise<FleetSnapshot> {
  return snapshots.get(source, now, () => source.snapshot(now));
}

function sourceOf(deps: ConsoleDeps): FleetSource | undefined {
  if (deps.fleet) return deps.fleet;
  if (!deps.view) return undefined;
  let source = fallback.get(deps.view);
  if (!source) fallback.set(deps.view, (source = alertsFleetSource(deps.view)));
  return source;
}

/**
 * The console: `GET /console/` and its assets (no token: they hold no data), `GET /v1/fleet`,
 * `GET /v1/fleet/{host}/{gpu}` and `GET /v1/alerts` (the bearer token, as every other API; it
 * takes `/api/v2/alerts`' query: `filter` matchers, `receiver`, the state flags).
 * Silences are the page calling `/v1/silences` itself: one validation, one code path.
 */
export async function serveConsole(req: IncomingMessage, res: ServerResponse, url: URL, deps: ConsoleDeps): Promise<ConsoleAnswer> {
  for (const [name, value] of Object.entries(HEADERS)) res.setHeader(name, value);
  const json = (status: number, body: object): ConsoleAnswer => ({ status, body, type: 'application/json' });
  if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'method_not_allowed', message: 'the console answers GET only' });
  const path = url.pathname;
  if (path === '/console') {
    res.setHeader('location', '/console/');
    return { status: 302, body: '', type: 'text/plain' };
  }
  if (path.startsWith('/console/')) {
    const asset = consoleAsset(path === '/console/' ? 'index.html' : path.slice('/console/'.length));
    return asset ? { status: 200, body: asset.body, type: asset.type } : json(404, { error: 'not_found', message: `no console file ${path.slice(0, 80)}` });
  }
  if (!deps.authorized) return json(401, { error: 'unauthorized', message: 'a bearer token is required' });
  const now = Date.now();
  const source = sourceOf(deps);
  if (path === '/v1/alerts') {
    if (!deps.view) return json(503, { error: 'no_notifier', message: 'this server runs without a notifier: there is no alert list to show' });
    const query = consoleAlertQuery(url.searchParams);
    if (typeof query === 'string') return json(400, { error: 'bad_filter', message: query });
    const snapshot = source ? await snapshotOf(source, now).catch(() => undefined) : undefined;
    return json(200, consoleAlerts(deps.view, snapshot, now, query));
  }
  if (!source) return json(503, { error: 'no_fleet_source', message: 'this server knows no fleet: run the console in `gpualert up` or beside a notifier' });
  const snapshot = await snapshotOf(source, now);
  if (path === '/v1/fleet') return json(200, url.searchParams.get('view') === 'grid' ? gridOf(snapshot) : snapshot);
  // consoleRoute let only this shape through; both groups take part in every match.
  const match = /^\/v1\/fleet\/([^/]+)\/([^/]+)$/.exec(path);
  if (!match) return json(404, { error: 'not_found', message: `no console route ${path.slice(0, 80)}` });
  const [, rawHost = '', rawGpu = ''] = match;
  let host: string;
  try {
    host = decodeURIComponent(rawHost);
  } catch {
    return json(400, { error: 'bad_host', message: 'the host is not valid percent-encoding' });
  }
  const index = /^\d{1,3}$/.test(rawGpu) ? Number(rawGpu) : NaN;
  if (!isHostName(host)) return json(400, { error: 'bad_host', message: 'a host is 1 to 253 characters, none of them a control character' });
  if (!isGpuIndex(index)) return json(400, { error: 'bad_gpu', message: 'a GPU is its index, 0 to 255' });
  const found = snapshot.hosts.find((h) => h.host === host);
  const gpu = found?.gpus.find((g) => g.index === index);
  if (!found || !gpu) return json(404, { error: 'not_found', message: `no GPU ${index} on ${JSON.stringify(host.slice(0, 80))} in the fleet` });
  const { gpus, ...hostFacts } = found;
  const siblings = gpus.filter((g) => g.index !== index).map((g) => ({ index: g.index, state: g.state }));
  // The GPU's recent history where the source keeps one (the engines' rings); none is no error.
  const history = source.history ? await source.history(host, index).catch(() => null) : null;
  const clock = snapshot.data_at === undefined || snapshot.data_at === null ? {} : { data_at: snapshot.data_at };
  return json(200, { at: snapshot.at, ...clock, source: snapshot.source, host: { ...hostFacts, siblings }, gpu, history });
}
