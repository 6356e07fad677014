import { DCGM_HOST_LABELS, DcgmSeriesAccumulator, hostOfSeries } from '@gpualert/gpu-metrics';
import type { GpuMetrics } from '@gpualert/schema';
import { GpualertError, MAX_HOST_LENGTH } from '@gpualert/schema';

/** The series a central collector asks Prometheus for by default: every dcgm-exporter field. */
export const DEFAULT_DCGM_SELECTOR = '{__name__=~"DCGM_FI_.*"}';

/**
 * Bounds on one answer: a fleet of 10,000 hosts × 8 GPUs × ~20 series is 1.6 M series, about
 * 400 MB of JSON; one collector is sized for a quarter of that and says so when it is over.
 */
export const PROMETHEUS_LIMITS = {
  maxBodyBytes: 128 * 1024 * 1024,
  maxSeries: 500_000,
  maxHosts: 10_000,
} as const;

export interface PrometheusQueryOptions {
  /** Prometheus' base URL, e.g. http://prometheus:9090 (a path prefix such as /prometheus is kept). */
  readonly url: string;
  readonly selector?: string;
  /** Labels naming the machine, first found wins; `instance` (without its port) is the last resort. */
  readonly hostLabels?: readonly string[];
  /** `Authorization` header value (Bearer/Basic), from the environment; never logged. */
  readonly authorization?: string;
  readonly timeoutMs: number;
  /** Evaluation time; Prometheus' "now" when absent. */
  readonly at?: Date;
}

export interface PrometheusGpus {
  /** GPUs per host. */
  readonly hosts: Map<string, GpuMetrics[]>;
  /** Series that named no metric or no host, or came past the host bound. */
  readonly skipped: number;
  /** The evaluation time asked for (the samples' time). */
  readonly evaluatedAt: Date;
}

/** Why a query failed; `kind` says how (the base's `code` is GA-PROMETHEUS-QUERY-FAILED). */
export class PrometheusQueryError extends GpualertError {
  constructor(
    readonly kind: 'unreachable' | 'timeout' | 'unparseable' | 'too_large' | 'redirected',
    message: string,
  ) {
    // Worth asking again only when Prometheus was away or slow; an answer it gave that cannot be used
    // (a redirect, not JSON, too large) will be the same next time.
    super('GA-PROMETHEUS-QUERY-FAILED', message, { retriable: kind === 'unreachable' || kind === 'timeout' });
  }
}

/** The host name `instance` gives: its address without the port (IPv6 brackets kept whole). */
export function hostOfInstance(instance: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(instance)?.[1];
  if (bracketed !== undefined) return bracketed;
  const colon = instance.lastIndexOf(':');
  return colon > 0 && instance.indexOf(':') === colon && /^\d+$/.test(instance.slice(colon + 1)) ? instance.slice(0, colon) : instance;
}

async function readBounded(response: Response, limit: number, what: string): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > limit) throw new PrometheusQueryError('too_large', `${what} answered ${declared} bytes, more than the ${limit} a query may`);
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new PrometheusQueryError(
        'too_large',
        `${what} answered more than the ${limit} bytes a query may; narrow --selector or run one collector per shard`,
      );
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

interface VectorAnswer {
  status?: unknown;
  error?: unknown;
  data?: { resultType?: unknown; result?: unknown };
}

/**
 * Asks Prometheus' HTTP API (`/api/v1/query`, an instant vector) for dcgm-exporter's series and
 * gathers them into GPUs per host with the same mapping as an exporter's own text.
 */
export async function queryPrometheusGpus(options: PrometheusQueryOptions): Promise<PrometheusGpus> {
  const base = options.url.replace(/\/+$/, '');
  const query = new URL(`${base}/api/v1/query`);
  query.searchParams.set('query', options.selector ?? DEFAULT_DCGM_SELECTOR);
  const askedAt = options.at ?? new Date();
  query.searchParams.set('time', (askedAt.getTime() / 1000).toFixed(3));
  const where = `Prometheus at ${new URL(base).origin}`;
  let response: Response;
  try {
    response = await fetch(query, {
      headers: { accept: 'application/json', ...(options.authorization ? { authorization: options.authorization } : {}) },
      signal: AbortSignal.timeout(options.timeoutMs),
      // Never followed: a redirect could carry the credentials, or the collector, to any address
      // (a cloud's metadata service at 169.254.169.254 among them).
      redirect: 'manual',
    });
  } catch (error) {
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    throw new PrometheusQueryError(
      timedOut ? 'timeout' : 'unreachable',
      `${where}: ${timedOut ? `no answer within ${options.timeoutMs} ms` : error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    const to = response.headers.get('location');
    let toOrigin = 'elsewhere';
    try {
      toOrigin = to ? new URL(to, base).origin : toOrigin;
    } catch {
      // an unreadable Location is still a redirect, refused the same
    }
    throw new PrometheusQueryError(
      'redirected',
      `${where} answered ${response.status}, a redirect to ${toOrigin}: gpualert never follows one; give Prometheus' own URL in --url`,
    );
  }
  const text = await readBounded(response, PROMETHEUS_LIMITS.maxBodyBytes, where);
  let answer: VectorAnswer;
  try {
    answer = JSON.parse(text) as VectorAnswer;
  } catch {
    throw new PrometheusQueryError('unparseable', `${where} answered ${response.status} with a body that is not JSON`);
  }
  if (!response.ok || answer.status !== 'success') {
    const why = typeof answer.error === 'string' ? answer.error.slice(0, 300) : `status ${response.status}`;
    throw new PrometheusQueryError(response.status === 401 || response.status === 403 ? 'unreachable' : 'unparseable', `${where} refused the query: ${why}`);
  }
  const result = answer.data?.result;
  if (answer.data?.resultType !== 'vector' || !Array.isArray(result))
    throw new PrometheusQueryError('unparseable', `${where} answered no instant vector (is the selector a range query?)`);
  if (result.length > PROMETHEUS_LIMITS.maxSeries) {
    throw new PrometheusQueryError(
      'too_large',
      `${where} answered ${result.length} series, more than the ${PROMETHEUS_LIMITS.maxSeries} one collector takes; narrow --selector or run one collector per shard`,
    );
  }
  const hostLabels = options.hostLabels ?? DCGM_HOST_LABELS;
  const series = new DcgmSeriesAccumulator();
  let skipped = 0;
  for (const item of result as { metric?: unknown; value?: unknown }[]) {
    const metric = item.metric;
    const value = item.value;
    if (typeof metric !== 'object' || metric === null || !Array.isArray(value) || value.length !== 2) {
      skipped += 1;
      continue;
    }
    // Labels are what an exporter sent: into a Map, never an object's keys.
    const labels = new Map<string, string>();
    for (const [k, v] of Object.entries(metric)) if (typeof v === 'string') labels.set(k, v);
    const name = labels.get('__name__');
    const instance = labels.get('instance');
    const host = hostOfSeries(labels, hostLabels, instance ? hostOfInstance(instance) : '');
    if (!name || host === '' || host.length > MAX_HOST_LENGTH) {
      skipped += 1;
      continue;
    }
    if (series.hostCount >= PROMETHEUS_LIMITS.maxHosts && !series.has(host)) {
      skipped += 1;
      continue;
    }
    // A sample value is a string ("61", "NaN", "+Inf"); an empty one is unknown, never Number("") = 0.
    const raw: unknown = value[1];
    const number = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
    if (!series.add(host, name, labels, number)) skipped += 1;
  }
  // The samples' time is the time we asked for, never a time the answer claims: one series dated
  // 2100 must not date every host's sample there.
  return { hosts: series.result(), skipped, evaluatedAt: askedAt };
}
