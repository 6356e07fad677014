import { GpualertError } from '@gpualert/schema';
import { causeMessage, errorMessage } from '../error-message.ts';
/**
 * The only outbound requests the intake makes: a provider's signing certificate or keys, and a
 * subscription confirmation. Each goes only to the provider's own hosts (by pattern, over HTTPS),
 * never follows a redirect, and is bounded in time and size.
 */

/** A key server that has not answered in 5 s is away: SNS waits 15 s for our answer, Pub/Sub 10 s, so there is time to say 503. */
export const PROVIDER_FETCH_TIMEOUT_MS = 5_000;
/** A PEM certificate is about 2 KB and Google's JWKS about 2-4 KB; 64 KB is far above either and bounds memory per fetch. */
export const MAX_PROVIDER_FETCH_BYTES = 64 * 1024;
/** How long a fetched key is kept when the server says nothing (Cache-Control max-age): an hour, as Google's keys rotate over days. */
export const DEFAULT_KEY_TTL_MS = 3_600_000;
/** The longest a key is kept whatever the server says: a revoked key stops verifying within a day. */
export const MAX_KEY_TTL_MS = 86_400_000;
/** Distinct key URLs kept: SNS has one certificate per region in use, Google one JWKS; 64 bounds what a flood of bodies naming new URLs can hold. */
export const MAX_CACHED_KEYS = 64;
/** Seconds a sender is told to wait when a key server is away: long enough for a blip, short enough that notices stay timely. */
export const KEY_SERVER_RETRY_AFTER_S = 30;

/**
 * Test-only: exact origins (`http://127.0.0.1:PORT`) fetched besides the providers' own hosts.
 * It is set only through `createIntakeServer`'s options, never from the environment or a config file.
 */
export interface FetchAllowance {
  readonly origins: readonly string[];
}

/** A key server or confirmation endpoint that did not answer usefully: the sender should retry (503). */
export class ProviderFetchError extends GpualertError {
  constructor(message: string) {
    super('GA-PROVIDER-FETCH-FAILED', message);
  }
}

/**
 * The URL when it is HTTPS to a host the pattern allows (on the default port), or one of the
 * allowance's exact origins; undefined otherwise. Never an arbitrary URL from a body.
 */
export function allowedUrl(value: unknown, hostPattern: RegExp, allowance?: FetchAllowance): URL | undefined {
  if (typeof value !== 'string' || value.length > 4096) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.username !== '' || url.password !== '') return undefined;
  if (allowance?.origins.includes(url.origin)) return url;
  if (url.protocol !== 'https:' || url.port !== '') return undefined;
  return hostPattern.test(url.hostname) ? url : undefined;
}

export interface FetchedBody {
  readonly status: number;
  readonly body: Buffer;
  /** From Cache-Control max-age, when given. */
  readonly maxAgeMs?: number;
}

/** GET with a deadline and a size cap; redirects are not followed (they could lead anywhere). */
export async function boundedGet(url: URL, options: { timeoutMs?: number; maxBytes?: number } = {}): Promise<FetchedBody> {
  const timeoutMs = options.timeoutMs ?? PROVIDER_FETCH_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? MAX_PROVIDER_FETCH_BYTES;
  const signal = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'manual', signal });
  } catch (error) {
    const why = signal.aborted ? `no answer within ${timeoutMs} ms` : causeMessage(error);
    throw new ProviderFetchError(`${url.host} could not be reached: ${why}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    if (response.body) {
      for await (const chunk of response.body) {
        size += chunk.length;
        if (size > maxBytes) {
          await response.body.cancel().catch(() => {});
          throw new ProviderFetchError(`${url.host} answered more than ${maxBytes} bytes`);
        }
        chunks.push(Buffer.from(chunk));
      }
    }
  } catch (error) {
    if (error instanceof ProviderFetchError) throw error;
    throw new ProviderFetchError(`${url.host} broke off: ${signal.aborted ? `no answer within ${timeoutMs} ms` : errorMessage(error)}`);
  }
  const maxAge = /(?:^|,)\s*max-age=(\d{1,9})/.exec(response.headers.get('cache-control') ?? '')?.[1];
  return { status: response.status, body: Buffer.concat(chunks), ...(maxAge ? { maxAgeMs: Number(maxAge) * 1000 } : {}) };
}

/**
 * Keys fetched at run time, by URL, kept until they expire; concurrent requests for one URL share
 * one fetch. `parse` turns the body into the key (and throws when it is not one).
 */
export class KeyCache<T> {
  private readonly entries = new Map<string, { readonly value: T; readonly expiresAt: number; readonly fetchedAt: number }>();
  private readonly inFlight = new Map<string, Promise<T>>();

  constructor(
    private readonly parse: (body: Buffer) => T,
    private readonly now: () => number,
    private readonly get: (url: URL) => Promise<FetchedBody> = boundedGet,
  ) {}

  /** The cached key, or a fresh fetch; `minAgeMs` forces a refetch of an entry older than that (a rotated key). */
  async key(url: URL, options: { refreshOlderThanMs?: number } = {}): Promise<T> {
    const id = url.href;
    const entry = this.entries.get(id);
    const now = this.now();
    const stale = entry && options.refreshOlderThanMs !== undefined && now - entry.fetchedAt > options.refreshOlderThanMs;
    if (entry && entry.expiresAt > now && !stale) return entry.value;
    const pending = this.inFlight.get(id);
    if (pending) return pending;
    const fetching = this.fetch(url).finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, fetching);
    return fetching;
  }

  private async fetch(url: URL): Promise<T> {
    const fetched = await this.get(url);
    if (fetched.status !== 200) throw new ProviderFetchError(`${url.host} answered ${fetched.status} for ${url.pathname}`);
    let value: T;
    try {
      value = this.parse(fetched.body);
    } catch (error) {
      throw new ProviderFetchError(`${url.host} answered something that is not a key (${errorMessage(error)})`);
    }
    const ttl = Math.min(fetched.maxAgeMs ?? DEFAULT_KEY_TTL_MS, MAX_KEY_TTL_MS);
    if (this.entries.size >= MAX_CACHED_KEYS) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    const now = this.now();
    this.entries.set(url.href, { value, expiresAt: now + ttl, fetchedAt: now });
    return value;
  }
}
