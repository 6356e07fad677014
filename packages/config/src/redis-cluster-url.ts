/** The most seed nodes a `redis+cluster://` URL may name: a client needs a few to find the rest. */
export const MAX_CLUSTER_SEEDS = 16;

/** What a `redis+cluster://` URL holds. */
export interface ClusterUrl {
  /** Nodes asked for the cluster's layout; the client finds every other node from them. */
  readonly seeds: readonly { readonly host: string; readonly port: number }[];
  readonly username?: string;
  readonly password?: string;
}

const CLUSTER_URL_FORM = 'redis+cluster://[[user]:password@]host:port[,host:port…]';

const HOST = /^[A-Za-z0-9._-]+$/;

/**
 * Reads `redis+cluster://[[user]:password@]host:port[,host:port…][/]` (a port left out is 6379;
 * userinfo percent-encoded where it holds `,` `/` or `%`; the password may hold `@`). One parser
 * for the setting's check and the store: a problem is a sentence that never holds the URL's text.
 */
export function parseClusterUrl(url: string): { ok: true; value: ClusterUrl } | { ok: false; problem: string } {
  const fail = (problem: string) => ({ ok: false as const, problem });
  if (!url.startsWith('redis+cluster://')) return fail(`expected ${CLUSTER_URL_FORM}`);
  const rest = url.slice('redis+cluster://'.length);
  const slash = rest.indexOf('/', Math.max(0, rest.lastIndexOf('@')));
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  if (slash !== -1 && rest.slice(slash) !== '/') return fail('expected nothing after the hosts: Redis Cluster has no database numbers or names');
  const at = authority.lastIndexOf('@');
  const auth = at === -1 ? undefined : authority.slice(0, at);
  const hosts = authority.slice(at + 1).split(',');
  if (hosts.length > MAX_CLUSTER_SEEDS) return fail(`expected at most ${MAX_CLUSTER_SEEDS} seed nodes, got ${hosts.length}`);
  const seeds: { host: string; port: number }[] = [];
  for (const [i, entry] of hosts.entries()) {
    const where = hosts.length > 1 ? `seed ${i + 1}: ` : '';
    if (entry.startsWith('[')) return fail(`${where}expected a host name or an IPv4 address (an IPv6 address is not supported there)`);
    const [host = '', port = '6379', ...more] = entry.split(':');
    if (!HOST.test(host) || more.length > 0) return fail(`${where}expected host:port`);
    if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65_535) return fail(`${where}expected a port from 1 to 65535`);
    seeds.push({ host, port: Number(port) });
  }
  if (auth === undefined) return { ok: true, value: { seeds } };
  const colon = auth.indexOf(':');
  const username = decode(colon === -1 ? auth : auth.slice(0, colon));
  const password = colon === -1 ? '' : decode(auth.slice(colon + 1));
  if (username === undefined || password === undefined) return fail('expected the user and password percent-encoded (a "%" not followed by two hex digits)');
  return { ok: true, value: { seeds, ...(username ? { username } : {}), ...(password ? { password } : {}) } };
}

function decode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
