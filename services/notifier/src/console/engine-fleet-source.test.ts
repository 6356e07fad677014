import { createServer, type Server } from 'node:http';
import type { FleetSnapshot } from '@gpualert/schema';
import { syntheticFleetSnapshot } from '@gpualert/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { engineAddresses } from './engine-addresses.ts';
import { engineFleetSource } from './engine-fleet-source.ts';

/** The synthetic fleet's times count back from here (a date, so none is before 1970). */
const NOW = Date.parse('2026-06-01T03:00:00Z');
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A stand-in engine's port: answers `/v1/fleet` with `body` (and a GPU's history for the hosts it holds). */
async function engine(body: string | object, address = '127.0.0.1', port = 0): Promise<string> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const server = createServer((req, res) => {
    if (req.url === '/v1/fleet') return void res.writeHead(200, { 'content-type': 'application/json' }).end(text);
    const history = /^\/v1\/fleet\/([^/]+)\/(\d+)\/history$/.exec(req.url ?? '');
    if (history && text.includes(`"host":"${decodeURIComponent(history[1]!)}"`))
      return void res.writeHead(200).end(
        JSON.stringify({
          step_ms: 15_000,
          at: [1],
          metrics: Object.fromEntries(
            ['temp_c', 'power_w', 'util_pct', 'mem_used_mib'].map((m) => [m, { values: [Number(history[2])], low: [null], high: [null] }]),
          ),
        }),
      );
    res.writeHead(404).end('{}');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(port, address, r));
  const bound = server.address();
  return `http://${address}:${typeof bound === 'object' && bound ? bound.port : 0}`;
}

/** Part of a synthetic fleet: the hosts from `from` to `to` (an engine owns a share of them). */
function part(fleet: FleetSnapshot, from: number, to: number, extra: Partial<FleetSnapshot> = {}): FleetSnapshot {
  return {
    ...fleet,
    hosts: fleet.hosts.slice(from, to),
    events: fleet.events.filter((e) => fleet.hosts.slice(from, to).some((h) => h.host === e.host)),
    ...extra,
  };
}

describe("the console's fleet from the engines", () => {
  it('merges two engines that each own part of the fleet: every host once, sorted, the events of both, the later recording clock', async () => {
    const fleet = syntheticFleetSnapshot(10, 8, Date.parse('2026-06-01T03:00:00Z'));
    const a = await engine(part(fleet, 0, 6, { data_at: Date.parse('2026-06-01T02:29:50Z') }));
    const b = await engine(part(fleet, 6, 10, { data_at: Date.parse('2026-06-01T02:29:40Z') }));
    const source = engineFleetSource([b, `${a}/`]);
    const merged = await source.snapshot(123);
    expect(merged.hosts.map((h) => h.host)).toEqual(fleet.hosts.map((h) => h.host).sort());
    expect(merged.hosts.reduce((n, h) => n + h.gpus.length, 0)).toBe(80);
    expect(merged.events.length).toBe(Math.min(200, fleet.events.length));
    expect(merged.data_at).toBe(Date.parse('2026-06-01T02:29:50Z'));
    expect(merged.unavailable).toBeUndefined();
    // A GPU's history is asked of the engine that served its host.
    const owned = fleet.hosts[7]!.host;
    expect((await source.history!(owned, 3))?.metrics.temp_c.values).toEqual([3]);
    expect(await source.history!('no-such-host', 3)).toBeNull();
  });

  it('a host two engines both name (a partition moving) is drawn once, as the one heard from last says', async () => {
    const fleet = syntheticFleetSnapshot(2, 1, NOW);
    const stale = { ...fleet.hosts[0]!, last_seen: NOW - 2_000, template: 'stale' };
    const fresh = { ...fleet.hosts[0]!, last_seen: NOW - 1_000, template: 'fresh' };
    const merged = await engineFleetSource([await engine({ ...fleet, hosts: [stale] }), await engine({ ...fleet, hosts: [fresh, fleet.hosts[1]!] })]).snapshot(
      1,
    );
    expect(merged.hosts.map((h) => [h.host, h.template])).toEqual([
      [fleet.hosts[0]!.host, 'fresh'],
      [fleet.hosts[1]!.host, fleet.hosts[1]!.template],
    ]);
  });

  it("an engine that does not answer, answers too much or answers nonsense is named; the others' hosts are drawn, and one bad host costs one host", async () => {
    const fleet = syntheticFleetSnapshot(3, 2, NOW);
    const good = await engine({ ...fleet, hosts: [...fleet.hosts, { host: 'bad', gpus: 'many' }] });
    const nonsense = await engine('{"hosts": 3}');
    const big = await engine({ ...fleet, padding: 'x'.repeat(50_000) });
    const closed = await engine({});
    await new Promise((r) => servers.pop()!.close(r));
    const merged = await engineFleetSource([good, nonsense, big, closed.replace('http://', 'http://user:secret@')], { maxBytes: 40_000 }).snapshot(1);
    expect(merged.hosts.map((h) => h.host)).toEqual(fleet.hosts.map((h) => h.host).sort());
    expect(merged.omitted_hosts).toBe(1);
    expect(merged.unavailable).toHaveLength(3);
    expect(merged.unavailable![0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+: not a fleet snapshot/);
    expect(merged.unavailable![1]).toMatch(/over the 40000-byte bound/);
    expect(merged.unavailable!.join(' ')).not.toContain('secret');
  });
});

/** A stand-in engine answering `/v1/fleet` as NDJSON (the shell, then a host a line), written `chunk` bytes at a time so that lines and characters are split. */
async function ndjsonEngine(lines: readonly string[], chunk: number): Promise<string> {
  const body = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
  const server = createServer((req, res) => {
    if (req.url !== '/v1/fleet' || !(req.headers.accept ?? '').includes('application/x-ndjson')) return void res.writeHead(406).end('{}');
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    for (let at = 0; at < body.length; at += chunk) res.write(body.subarray(at, at + chunk));
    res.end();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const bound = server.address();
  return `http://127.0.0.1:${typeof bound === 'object' && bound ? bound.port : 0}`;
}

describe('an engine that answers host by host (NDJSON)', () => {
  it('is read a line at a time across chunks that split lines and characters; a host line that does not read costs that host; a line past the bound names the engine', async () => {
    const fleet = syntheticFleetSnapshot(12, 8, NOW);
    const hosts = fleet.hosts.map((h, i) => (i === 5 ? { ...h, host: 'gpu-ノード-005' } : h));
    const { hosts: _, ...rest } = fleet;
    const shell = JSON.stringify({ hosts: [], ...rest });
    const lines = [
      shell,
      ...hosts.slice(0, 8).map((h) => JSON.stringify(h)),
      '{"host": "bad", "gpus": "many"',
      ...hosts.slice(8).map((h) => JSON.stringify(h)),
    ];
    const split = await ndjsonEngine(lines, 7);
    const merged = await engineFleetSource([split]).snapshot(1);
    expect(merged.hosts.map((h) => h.host)).toEqual(hosts.map((h) => h.host).sort());
    expect(merged.hosts.find((h) => h.host === 'gpu-ノード-005')?.gpus).toEqual(hosts[5]!.gpus);
    expect(merged.omitted_hosts).toBe(fleet.omitted_hosts + 1);
    expect(merged.events.length).toBe(Math.min(200, fleet.events.length));
    expect(merged.unavailable).toBeUndefined();
    // One line that never ends: refused at the line bound (4 MiB), long before the answer's.
    const endless = await ndjsonEngine([shell, `{"host":"${'x'.repeat(5 * 1024 * 1024)}"}`], 64 * 1024);
    const refused = await engineFleetSource([endless, split]).snapshot(1);
    expect(refused.hosts).toHaveLength(12);
    expect(refused.unavailable).toEqual([expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+: a line of the answer is over the 4194304-byte bound$/)]);
  });
});

describe('engines found by name (dns+), as a headless Service lists its pods', () => {
  it('asks every address the name resolves to at each snapshot, and names a name that does not resolve', async () => {
    const fleet = syntheticFleetSnapshot(6, 8, NOW);
    // two engines on one port, at two loopback addresses: the two pods a headless Service's name resolves to
    const a = await engine(part(fleet, 0, 3), '127.0.0.1');
    const port = new URL(a).port;
    await engine(part(fleet, 3, 6), '127.0.0.2', Number(port));
    let pods = [{ address: '127.0.0.1', family: 4 }];
    const lookup = async (name: string) => {
      if (name !== 'gpualert-engine') throw new Error(`getaddrinfo ENOTFOUND ${name}`);
      return pods;
    };
    const source = engineFleetSource([`dns+http://gpualert-engine:${port}`], { lookup });
    expect((await source.snapshot(NOW)).hosts.length).toBe(3);
    // dual stack: the pod's IPv6 address is the same engine, not asked again (nobody listens there: it would be named unavailable)
    pods = [...pods, { address: '::1', family: 6 }];
    const once = await source.snapshot(NOW);
    expect([once.hosts.length, once.unavailable]).toEqual([3, undefined]);
    pods = pods.slice(0, 1);
    // scaled to two replicas: the next snapshot asks both
    pods = [...pods, { address: '127.0.0.2', family: 4 }];
    const both = await source.snapshot(NOW);
    expect(both.hosts.map((h) => h.host)).toEqual(fleet.hosts.map((h) => h.host).sort());
    expect(both.unavailable).toBeUndefined();
    const lost = await engineFleetSource([`dns+http://gpualert-engne:${port}`, a], { lookup }).snapshot(NOW);
    expect(lost.hosts.length).toBe(3);
    expect(lost.unavailable).toEqual([`dns+http://gpualert-engne:${port}: gpualert-engne does not resolve (getaddrinfo ENOTFOUND gpualert-engne)`]);
  });

  it("resolves through the system's resolver: localhost is an engine", async () => {
    const fleet = syntheticFleetSnapshot(2, 8, NOW);
    const a = await engine(part(fleet, 0, 2), '127.0.0.1');
    const { urls } = await engineAddresses([`dns+http://localhost:${new URL(a).port}`]);
    expect(urls).toContain(a);
  });
});
