import { lookup } from 'node:dns/promises';
import { MAX_FLEET_SOURCES } from '@gpualert/schema';

/**
 * `dns+http://gpualert-engine:9470` (Thanos' spelling): every address the name resolves to is one
 * engine, asked at each snapshot. In Kubernetes a headless Service's name resolves to each ready
 * pod of the engines' Deployment, so replicas scaled up or replaced are found without a list.
 */
export const DNS_PREFIX = 'dns+';

export type Lookup = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

/** A name that takes longer than this to resolve is named unavailable (getaddrinfo holds a libuv thread meanwhile). */
export const ENGINE_LOOKUP_TIMEOUT_MS = 2_000;

const systemLookup: Lookup = (hostname) => lookup(hostname, { all: true, verbatim: true });

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Whether a configured engine is a name to resolve at each ask. */
export function isDnsEngine(base: string): boolean {
  return base.startsWith(DNS_PREFIX);
}

/**
 * The engines to ask now: each plain URL as it is, each `dns+` one as one URL per address its name
 * resolves to (same scheme, port and path), at most MAX_FLEET_SOURCES in all, each once. A name
 * that does not resolve is named in `failed`, as an engine that does not answer is.
 */
export async function engineAddresses(bases: readonly string[], resolve: Lookup = systemLookup): Promise<{ urls: string[]; failed: string[] }> {
  const urls: string[] = [];
  const failed: string[] = [];
  for (const base of bases) {
    if (!isDnsEngine(base)) {
      urls.push(base);
      continue;
    }
    const url = new URL(base.slice(DNS_PREFIX.length));
    const name = url.hostname;
    try {
      const all = await withTimeout(resolve(name), ENGINE_LOOKUP_TIMEOUT_MS, `resolving ${name}`);
      // One family: on a dual-stack cluster each pod has an IPv4 and an IPv6 address, and one engine
      // asked twice would count its hosts twice. IPv4 where there is any; a scoped address (fe80::1%eth0) is no URL host.
      const v4 = all.filter((a) => a.family === 4);
      const addresses = (v4.length > 0 ? v4 : all.filter((a) => a.family === 6 && !a.address.includes('%'))).slice(0, MAX_FLEET_SOURCES);
      if (addresses.length === 0) failed.push(`${base}: ${name} resolves to no address`);
      for (const { address, family } of addresses) {
        url.hostname = family === 6 ? `[${address}]` : address;
        urls.push(url.toString().replace(/\/+$/, ''));
      }
    } catch (error) {
      failed.push(`${base}: ${name} does not resolve (${error instanceof Error ? error.message : String(error)})`.slice(0, 300));
    }
  }
  return { urls: [...new Set(urls)].slice(0, MAX_FLEET_SOURCES), failed };
}
