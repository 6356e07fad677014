import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { snsStringToSign } from '@gpualert/intake';
import { close, listen } from '../infra/http.ts';

const fixtureDir = new URL('../fixtures/provider/', import.meta.url);
export const fixture = (name: string) => readFileSync(new URL(name, fixtureDir), 'utf8');
export const SNS_KEY = fixture('deliveries/loopback-sns-signing.key');
export const SNS_CERT = fixture('deliveries/loopback-sns-signing.pem');
const NOT_SNS_CERT = fixture('deliveries/loopback-not-sns.pem');

/**
 * What the providers' servers do for the intake, on loopback: SNS's signing certificate and
 * SubscribeURL, Google's JWKS, OCI's ConfirmationURL. It records every request, and can be told
 * to fail (500) to play a key server that is away.
 */
export class LoopbackProvider {
  readonly requests: string[] = [];
  failing = false;
  readonly jwtKey: { privateKey: KeyObject; publicKey: KeyObject; kid: string };
  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.jwtKey = { ...pair, kid: `kid-${randomUUID()}` };
  }

  static async start(): Promise<LoopbackProvider> {
    let self: LoopbackProvider | undefined;
    const server = createServer((request, response) => {
      self!.requests.push(request.url ?? '');
      if (self!.failing) return void response.writeHead(500).end();
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      if (path === '/SimpleNotificationService-loopback.pem') return void response.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(SNS_CERT);
      if (path === '/SimpleNotificationService-notsns.pem') return void response.writeHead(200).end(NOT_SNS_CERT);
      if (path === '/oauth2/v3/certs') {
        const jwk = { ...self!.jwtKey.publicKey.export({ format: 'jwk' }), kid: self!.jwtKey.kid, alg: 'RS256', use: 'sig' };
        return void response
          .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' })
          .end(JSON.stringify({ keys: [jwk] }));
      }
      if (path === '/confirm') return void response.writeHead(200, { 'content-type': 'text/xml' }).end('<ConfirmSubscriptionResponse/>');
      response.writeHead(404).end();
    });
    const origin = await listen(server);
    self = new LoopbackProvider(server, origin);
    return self;
  }

  /** A published SNS sample, pointed at this server and signed with its key (SignatureVersion 1 or 2). */
  signSns(message: Record<string, unknown>, version: '1' | '2' = '1', cert = 'SimpleNotificationService-loopback.pem'): Record<string, unknown> {
    const pointed: Record<string, unknown> = { ...message, SignatureVersion: version, SigningCertURL: `${this.origin}/${cert}` };
    if (typeof pointed.SubscribeURL === 'string') pointed.SubscribeURL = `${this.origin}/confirm?${new URL(pointed.SubscribeURL).search.slice(1)}`;
    const signer = createSign(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256');
    signer.update(snsStringToSign(pointed)!);
    return { ...pointed, Signature: signer.sign(SNS_KEY, 'base64') };
  }

  /** A Google-style OIDC token for a push subscription, signed with this server's JWKS key. */
  jwt(claims: Record<string, unknown>, options: { kid?: string; key?: KeyObject } = {}): string {
    const head = Buffer.from(JSON.stringify({ alg: 'RS256', kid: options.kid ?? this.jwtKey.kid, typ: 'JWT' })).toString('base64url');
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const signer = createSign('RSA-SHA256');
    signer.update(`${head}.${body}`);
    return `${head}.${body}.${signer.sign(options.key ?? this.jwtKey.privateKey).toString('base64url')}`;
  }

  count(path: string): number {
    return this.requests.filter((r) => r.startsWith(path)).length;
  }

  stop(): Promise<void> {
    return close(this.server);
  }
}
