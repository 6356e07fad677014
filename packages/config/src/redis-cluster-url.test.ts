import { describe, expect, it } from 'vitest';
import { MAX_CLUSTER_SEEDS, parseClusterUrl } from './redis-cluster-url.ts';

describe('a redis+cluster:// URL', () => {
  it('names its seed nodes (6379 where no port is given), and a user and password percent-decoded', () => {
    expect(parseClusterUrl('redis+cluster://10.0.0.1:7000,redis-2,redis-3.example:7002/')).toEqual({
      ok: true,
      value: {
        seeds: [
          { host: '10.0.0.1', port: 7000 },
          { host: 'redis-2', port: 6379 },
          { host: 'redis-3.example', port: 7002 },
        ],
      },
    });
    expect(parseClusterUrl('redis+cluster://:s3c@r%2Cet@h:7000')).toEqual({ ok: true, value: { seeds: [{ host: 'h', port: 7000 }], password: 's3c@r,et' } });
    expect(parseClusterUrl('redis+cluster://gpualert:pa/ss@h:7000')).toEqual({
      ok: true,
      value: { seeds: [{ host: 'h', port: 7000 }], username: 'gpualert', password: 'pa/ss' },
    });
  });

  it('refuses what the store could not open, in one sentence that never holds the URL', () => {
    const bad: [string, RegExp][] = [
      ['redis+cluster://', /^expected host:port$/],
      ['redis+cluster://:s3cret@', /^expected host:port$/],
      ['redis+cluster://:s3cret@h:7000,', /^seed 2: expected host:port$/],
      ['redis+cluster://:s3cret@h:0', /^expected a port from 1 to 65535$/],
      ['redis+cluster://:s3cret@h:70000', /^expected a port/],
      ['redis+cluster://:s3cret@h:0x50', /^expected a port/],
      ['redis+cluster://:s3cret@h:1:2', /^expected host:port$/],
      ['redis+cluster://:s3cret@h:7000?tls=1', /^expected a port/],
      ['redis+cluster://:s3cret@[::1]:7000', /IPv6 address is not supported/],
      ['redis+cluster://:s3cret@h:7000/0', /no database numbers/],
      ['redis+cluster://:s3cret%zz@h:7000', /percent-encoded/],
      ['redis://:s3cret@h:7000', /^expected redis\+cluster:\/\//],
      [
        `redis+cluster://:s3cret@${Array.from({ length: MAX_CLUSTER_SEEDS + 1 }, (_, i) => `h${i}:7000`).join(',')}`,
        /^expected at most 16 seed nodes, got 17$/,
      ],
    ];
    for (const [url, problem] of bad) {
      const parsed = parseClusterUrl(url);
      expect(parsed.ok, url).toBe(false);
      if (!parsed.ok) {
        expect(parsed.problem, url).toMatch(problem);
        expect(parsed.problem).not.toContain('s3cret');
      }
    }
    expect(parseClusterUrl(`redis+cluster://${Array.from({ length: MAX_CLUSTER_SEEDS }, (_, i) => `h${i}:7000`).join(',')}`).ok).toBe(true);
  });
});
