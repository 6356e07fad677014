import { X509Certificate } from 'node:crypto';
import { GpualertError, must } from '@gpualert/schema';
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { isObject, type Json } from './redfish-parse.ts';

/** Who may read the BMC. Never logged, never part of an error. */
export interface BmcCredentials {
  readonly username: string;
  readonly password: string;
}

/**
 * How to trust a BMC's certificate: a CA (or the BMC's own self-signed certificate) in PEM, or the
 * SHA-256 fingerprint of the certificate it must present (`AB:CD:…` or plain hex). Neither: the
 * system's CAs (most BMCs ship self-signed certificates, so one of the two is usually needed).
 */
export interface BmcTls {
  readonly ca?: string;
  readonly fingerprint256?: string;
}

export interface RedfishClientOptions {
  /** `https://bmc-host[:port]` (a path, if any, is ignored: Redfish lives at /redfish/v1). */
  readonly url: string;
  readonly auth: 'session' | 'basic' | 'none';
  readonly credentials?: BmcCredentials;
  readonly tls?: BmcTls;
  /** One request, connect to last byte. */
  readonly timeoutMs: number;
  /** The largest response body read; a bigger one fails that request. */
  readonly maxBodyBytes: number;
  /** Connections kept to this BMC (BMCs serve few at once; 2 is kind). */
  readonly maxSockets: number;
  /** Allow session or basic auth over plain `http://`, credentials in clear (a lab BMC, a tunnel). Off by default. */
  readonly insecureHttp?: boolean;
}

/**
 * `text` with the userinfo of every URL-like word hidden: everything before a word's last `@`
 * becomes `***` (its scheme kept), so `https://root:pw@bmc` and `root:pw@bmc` echo as
 * `https://***@bmc` and `***@bmc`. For messages that quote what a person typed.
 */
export function redactUserinfo(text: string): string {
  return text
    .split(/(\s+)/)
    .map((word) => {
      const at = word.lastIndexOf('@');
      if (at < 0) return word;
      const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(word)?.[0] ?? '';
      return `${scheme}***${word.slice(at)}`;
    })
    .join('');
}

export type RedfishErrorCode = 'unreachable' | 'timeout' | 'unparseable' | 'command_failed';

/** A failed Redfish request: what and where, never the credentials. */
/** Why a BMC request failed; `kind` says how (the base's `code` is GA-BMC-FETCH-FAILED). */
export class RedfishError extends GpualertError {
  constructor(
    readonly kind: RedfishErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super('GA-BMC-FETCH-FAILED', message);
  }
}

/** Redfish paths this client follows: on the BMC itself, under /redfish/, of a sane length. */
export const MAX_REDFISH_PATH_LENGTH = 1_024;

function normalizeFingerprint(f: string): string {
  return f.replace(/[^0-9a-f]/gi, '').toUpperCase();
}

interface Response {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * A Redfish client for one BMC: session or basic auth, a pinned certificate for self-signed BMCs,
 * and a bound on every request's time and size. Only paths on the same BMC are followed, so a
 * document's link cannot send the session token elsewhere.
 */
export class RedfishClient {
  private readonly base: URL;
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly pin: string | undefined;
  private ca: string | undefined;
  private token: string | undefined;
  private sessionPath: string | undefined;

  constructor(private readonly options: RedfishClientOptions) {
    let base: URL;
    try {
      base = new URL(options.url);
    } catch {
      throw new RedfishError('command_failed', `not a URL: ${redactUserinfo(options.url.slice(0, 200))}`);
    }
    if (base.protocol !== 'https:' && base.protocol !== 'http:') {
      throw new RedfishError('command_failed', `expected an https:// or http:// BMC URL, got ${base.protocol}`);
    }
    if (base.username || base.password) {
      // Credentials in a URL end up in shell history and process lists.
      throw new RedfishError('command_failed', 'credentials in the BMC URL are refused: give them in the environment or a file');
    }
    if (options.auth !== 'none' && !options.credentials) throw new RedfishError('command_failed', `${options.auth} auth needs credentials`);
    if (options.auth !== 'none' && base.protocol === 'http:' && options.insecureHttp !== true) {
      throw new RedfishError(
        'command_failed',
        `${options.auth} auth over http://${base.host} sends the credentials in clear: use https://, or allow it with insecureHttp (--insecure-http)`,
      );
    }
    this.base = base;
    this.pin = options.tls?.fingerprint256 ? normalizeFingerprint(options.tls.fingerprint256) : undefined;
    if (this.pin !== undefined && this.pin.length !== 64) throw new RedfishError('command_failed', 'a SHA-256 fingerprint has 64 hex digits');
    this.ca = options.tls?.ca;
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: options.maxSockets };
    this.agent = base.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
  }

  /** The BMC's origin, for logs (never with credentials: the constructor refuses them). */
  get origin(): string {
    return this.base.origin;
  }

  /** Opens a session when the auth is `session`; a no-op otherwise. */
  async open(): Promise<void> {
    if (this.options.auth !== 'session' || this.token) return;
    const credentials = must(this.options.credentials, 'the constructor refuses session auth without credentials');
    const response = await this.send(
      'POST',
      '/redfish/v1/SessionService/Sessions',
      JSON.stringify({ UserName: credentials.username, Password: credentials.password }),
      false,
    );
    if (response.status !== 201 && response.status !== 200) {
      throw new RedfishError(
        'command_failed',
        `POST /redfish/v1/SessionService/Sessions: HTTP ${response.status}${response.status === 401 ? ' (credentials refused)' : ''}`,
        response.status,
      );
    }
    const token = response.headers['x-auth-token'];
    if (typeof token !== 'string' || !token) throw new RedfishError('unparseable', 'the session was created without an X-Auth-Token header');
    this.token = token;
    this.sessionPath = this.sessionLocation(response);
  }

  /** Deletes the session, if one is open; failures are ignored (the BMC times it out). */
  async close(): Promise<void> {
    const path = this.sessionPath;
    if (path && this.token) {
      try {
        await this.send('DELETE', path, undefined, true);
      } catch {
        // The BMC expires the session on its own.
      }
    }
    this.token = undefined;
    this.sessionPath = undefined;
    this.agent.destroy();
  }

  /** GET a Redfish resource as JSON. A 401 on a session reopens it once. */
  async get(path: string): Promise<Json> {
    const target = this.checkPath(path);
    let response = await this.send('GET', target, undefined, true);
    if (response.status === 401 && this.options.auth === 'session') {
      this.token = undefined;
      await this.open();
      response = await this.send('GET', target, undefined, true);
    }
    if (response.status !== 200) throw new RedfishError('command_failed', `GET ${target}: HTTP ${response.status}`, response.status);
    let doc: unknown;
    try {
      doc = JSON.parse(response.body.toString('utf8'));
    } catch {
      throw new RedfishError('unparseable', `GET ${target}: the body is not JSON`);
    }
    if (!isObject(doc)) throw new RedfishError('unparseable', `GET ${target}: expected a JSON object`);
    return doc;
  }

  private checkPath(path: string): string {
    let pathname: string;
    try {
      const url = new URL(path, this.base);
      if (url.origin !== this.base.origin) throw new Error('elsewhere');
      pathname = url.pathname + url.search;
    } catch {
      throw new RedfishError('unparseable', `a link off the BMC is not followed: ${path.slice(0, 200)}`);
    }
    if (!pathname.startsWith('/redfish/') || pathname.length > MAX_REDFISH_PATH_LENGTH) {
      throw new RedfishError('unparseable', `not a Redfish path: ${pathname.slice(0, 200)}`);
    }
    return pathname;
  }

  private sessionLocation(response: Response): string | undefined {
    const location = response.headers.location;
    if (typeof location === 'string' && location) {
      try {
        return this.checkPath(location);
      } catch {
        return undefined;
      }
    }
    try {
      const body: unknown = JSON.parse(response.body.toString('utf8'));
      if (isObject(body) && typeof body['@odata.id'] === 'string') return this.checkPath(body['@odata.id']);
    } catch {
      // No body: the session cannot be deleted, it times out on the BMC.
    }
    return undefined;
  }

  private authHeaders(authenticated: boolean): Record<string, string> {
    if (!authenticated) return {};
    if (this.options.auth === 'basic') {
      const { username, password } = must(this.options.credentials, 'the constructor refuses basic auth without credentials');
      return { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` };
    }
    return this.token ? { 'x-auth-token': this.token } : {};
  }

  /** With a fingerprint pin: the BMC's certificate, fetched once and checked, becomes the only CA trusted. */
  private async pinnedCa(): Promise<string> {
    if (this.ca !== undefined) return this.ca;
    const host = this.base.hostname.replace(/^\[|\]$/g, '');
    const cert = await new Promise<PeerCertificate>((resolve, reject) => {
      const socket = tlsConnect(
        {
          host,
          port: Number(this.base.port || 443),
          rejectUnauthorized: false,
          ...(isIP(host) ? {} : { servername: host }),
        },
        () => {
          const peer = socket.getPeerCertificate();
          socket.destroy();
          resolve(peer);
        },
      );
      socket.setTimeout(this.options.timeoutMs, () => {
        socket.destroy();
        reject(new RedfishError('timeout', `TLS handshake with ${this.base.host}: no answer in ${this.options.timeoutMs} ms`));
      });
      socket.on('error', (error: NodeJS.ErrnoException) =>
        reject(new RedfishError('unreachable', `TLS handshake with ${this.base.host}: ${error.code ?? error.message}`)),
      );
    });
    if (!cert.raw || normalizeFingerprint(cert.fingerprint256 ?? '') !== this.pin) {
      throw new RedfishError('unreachable', `the certificate of ${this.base.host} does not match the pinned SHA-256 fingerprint`);
    }
    this.ca = new X509Certificate(cert.raw).toString();
    return this.ca;
  }

  private async send(method: string, path: string, body: string | undefined, authenticated: boolean): Promise<Response> {
    const https = this.base.protocol === 'https:';
    const tlsOptions =
      https && this.pin !== undefined
        ? {
            ca: await this.pinnedCa(),
            // The pin names one certificate, so the name on it is not what is trusted.
            checkServerIdentity: (_host: string, cert: PeerCertificate) =>
              normalizeFingerprint(cert.fingerprint256 ?? '') === this.pin ? undefined : new Error('certificate fingerprint does not match the pin'),
          }
        : https && this.ca !== undefined
          ? { ca: this.ca }
          : {};
    const { maxBodyBytes, timeoutMs } = this.options;
    return new Promise<Response>((resolve, reject) => {
      const headers: Record<string, string> = { accept: 'application/json', 'odata-version': '4.0', ...this.authHeaders(authenticated) };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(Buffer.byteLength(body));
      }
      const options = {
        method,
        host: this.base.hostname.replace(/^\[|\]$/g, ''),
        port: this.base.port || (https ? 443 : 80),
        path,
        headers,
        agent: this.agent,
        ...tlsOptions,
      };
      const req = (https ? httpsRequest : httpRequest)(options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBodyBytes) {
            req.destroy(new RedfishError('unparseable', `${method} ${path}: response over ${maxBodyBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
        });
        res.on('error', (error) => {
          clearTimeout(timer);
          reject(error instanceof RedfishError ? error : new RedfishError('unreachable', `${method} ${path}: ${error.message}`));
        });
      });
      const timer = setTimeout(() => req.destroy(new RedfishError('timeout', `${method} ${path}: no answer in ${timeoutMs} ms`)), timeoutMs);
      req.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(error instanceof RedfishError ? error : new RedfishError('unreachable', `${method} ${this.base.host}${path}: ${error.code ?? error.message}`));
      });
      req.end(body);
    });
  }
}

/** SHA-256 fingerprint of a PEM certificate, as `openssl x509 -fingerprint -sha256` prints it (for docs and tests). */
export function certificateFingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}
