import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { MemoryBus } from '@gpualert/bus';
import { LogCursor, pollRedfish, RedfishClient, startBmcCollector, type RedfishPollLimits } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { waitFor } from './infra/wait-for.ts';
import { cleanEnv, runCli } from './infra/run-cli.ts';

/**
 * What an adversarial review found in `collect bmc` (synthetic BMCs: the shapes follow Redfish's
 * LogEntryCollection, paged by @odata.nextLink with Members@odata.count and $skip/$top).
 */

type Doc = Record<string, unknown>;
const SEL = '/redfish/v1/Systems/1/LogServices/SEL';
const DAY = 24 * 3_600_000;

function selEntry(id: number, createdMs: number, severity = 'OK', message = `old entry ${id}`): Doc {
  return { '@odata.id': `${SEL}/Entries/${id}`, Id: String(id), Created: new Date(createdMs).toISOString(), Severity: severity, Message: message };
}

/** A BMC with one system whose SEL holds `entries` in the order given, served in pages of `pageSize`. */
function selBmc(entries: Doc[], options: { pageSize: number; skip: boolean }) {
  const docs = new Map<string, Doc>([
    ['/redfish/v1', { Systems: { '@odata.id': '/redfish/v1/Systems' } }],
    ['/redfish/v1/Systems', { Members: [{ '@odata.id': '/redfish/v1/Systems/1' }] }],
    [
      '/redfish/v1/Systems/1',
      { '@odata.id': '/redfish/v1/Systems/1', Status: { Health: 'OK' }, LogServices: { '@odata.id': '/redfish/v1/Systems/1/LogServices' } },
    ],
    ['/redfish/v1/Systems/1/LogServices', { Members: [{ '@odata.id': SEL }] }],
    [SEL, { '@odata.id': SEL, Entries: { '@odata.id': `${SEL}/Entries` } }],
  ]);
  const seen: string[] = [];
  return {
    seen,
    async get(path: string): Promise<Doc> {
      seen.push(path);
      if (path.startsWith(`${SEL}/Entries`)) {
        // A BMC without $skip support ignores the query but still pages by its own skip token.
        const token = /[?&]skiptoken=(\d+)/.exec(path)?.[1];
        const skipped = options.skip ? /[?&]\$skip=(\d+)/.exec(path)?.[1] : undefined;
        const from = Number(token ?? skipped ?? 0);
        const page = entries.slice(from, from + options.pageSize);
        const next = from + options.pageSize < entries.length ? { '@odata.nextLink': `${SEL}/Entries?skiptoken=${from + options.pageSize}` } : {};
        return { Members: page, 'Members@odata.count': entries.length, ...next };
      }
      const doc = docs.get(path);
      if (!doc) throw new Error(`404 ${path}`);
      return doc;
    },
  };
}

/** One poll of one BMC by the collector, and the log lines it wrote at `level` and above. */
async function logOfOnePoll(client: { get(path: string): Promise<Doc> }, host: string, level: 'warn' | 'info'): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const log = createLogger({
    name: 'test',
    level,
    destination: new Writable({
      write(chunk: Buffer, _e, cb) {
        lines.push(chunk.toString());
        cb();
      },
    }),
  });
  const bus = new MemoryBus();
  await bus.ensureTopics(Object.values(TOPICS));
  const collector = startBmcCollector({
    bus,
    store: new MemoryStore(),
    intervalMs: 60_000,
    log,
    targets: [{ host, source: { origin: 'redfish', where: 'fake-bmc', poll: () => pollRedfish(client), close: async () => {} } }],
  });
  try {
    await waitFor(() => collector.stats.polls > 0, 'one poll', 10_000);
  } finally {
    await collector.stop();
  }
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function newCriticalIsSeen(order: 'oldest-first' | 'newest-first', count: number, bmc: { pageSize: number; skip: boolean }) {
  const now = Date.now();
  const entries = Array.from({ length: count }, (_, i) => selEntry(i + 1, now - (count - i) * 60_000 - 2 * DAY));
  if (order === 'newest-first') entries.reverse();
  const fake = selBmc(entries, bmc);
  const cursor = new LogCursor();
  const first = await pollRedfish(fake);
  expect(cursor.fresh(first.entries, now, 3_600_000)).toEqual([]);
  const critical = selEntry(count + 1, now, 'Critical', 'Power Supply PS1 failure detected');
  if (order === 'newest-first') entries.unshift(critical);
  else entries.push(critical);
  const second = await pollRedfish(fake);
  return { fresh: cursor.fresh(second.entries, now, 3_600_000), poll: second, fake };
}

describe('a full SEL: the newest entries are the ones read', () => {
  it('oldest first, 5,000 entries in pages of 100: the new Critical entry at the end is read (through $skip)', async () => {
    const { fresh, poll } = await newCriticalIsSeen('oldest-first', 5_000, { pageSize: 100, skip: true });
    expect(fresh.map((e) => [e.severity, e.message])).toEqual([['critical', 'Power Supply PS1 failure detected']]);
    expect(poll.problems).toEqual([]);
  });

  it('oldest first in one expanded page of 2,000: the newest 500 are kept, not the first 500', async () => {
    const { fresh, poll } = await newCriticalIsSeen('oldest-first', 2_000, { pageSize: 10_000, skip: false });
    expect(fresh.map((e) => e.severity)).toEqual(['critical']);
    expect(poll.entries).toHaveLength(500);
  });

  it('newest first, 5,000 entries: the first page holds the new entry, and nothing more is paged', async () => {
    const { fresh, fake, poll } = await newCriticalIsSeen('newest-first', 5_000, { pageSize: 100, skip: true });
    expect(fresh.map((e) => e.severity)).toEqual(['critical']);
    expect(poll.problems).toEqual([]);
    expect(fake.seen.filter((p) => p.includes('$skip'))).toEqual([]);
  });

  it('oldest first on a BMC that ignores $skip: pages to the end within the bound, else says the SEL was truncated', async () => {
    const small = await newCriticalIsSeen('oldest-first', 350, { pageSize: 100, skip: false });
    expect(small.fresh.map((e) => e.severity)).toEqual(['critical']);
    expect(small.poll.problems).toEqual([]);
    const big = await newCriticalIsSeen('oldest-first', 5_000, { pageSize: 100, skip: false });
    expect(big.fresh).toEqual([]);
    expect(big.poll.problems.join('\n')).toMatch(/SEL truncated/);
  });
  it('the collector warns when a SEL could not be read to its end (at warn, where the default log level shows it)', async () => {
    const now = Date.now();
    const fake = selBmc(
      Array.from({ length: 5_000 }, (_, i) => selEntry(i + 1, now - (5_000 - i) * 60_000)),
      { pageSize: 100, skip: false },
    );
    const lines = await logOfOnePoll(fake, 'gpu-node-3', 'warn');
    const warned = lines.find((l) => l.msg === 'bmc_poll_incomplete');
    expect(warned).toMatchObject({ host: 'gpu-node-3', incomplete: [expect.stringContaining('SEL truncated')] });
  });

  it('a poll that reads nothing (every link refused) is a warning at the default level; a partial one stays a debug line', async () => {
    // A BMC whose every link fails: the service root answers, its Systems and Chassis do not.
    const refusing = {
      async get(path: string): Promise<Doc> {
        if (path === '/redfish/v1') return { Systems: { '@odata.id': '/redfish/v1/Systems' }, Chassis: { '@odata.id': '/redfish/v1/Chassis' } };
        throw new Error(`refused ${path}`);
      },
    };
    const partly = selBmc([], { pageSize: 100, skip: true }); // health read, its Chassis link absent
    const said = (client: { get(path: string): Promise<Doc> }) => logOfOnePoll(client, 'gpu-node-4', 'info');
    const nothing = await said(refusing);
    expect(nothing.find((l) => l.msg === 'bmc_poll_read_nothing')).toMatchObject({ msg: 'bmc_poll_read_nothing' });
    const partial = await said(partly);
    expect(partial.map((l) => l.msg)).not.toContain('bmc_poll_read_nothing');
  });
});

describe('what one poll may cost', () => {
  it('a BMC with 32 chassis of 32 fans each still has its SEL read: the log services come first', async () => {
    const now = Date.now();
    const docs = new Map<string, Doc>([
      ['/redfish/v1', { Chassis: { '@odata.id': '/redfish/v1/Chassis' }, Systems: { '@odata.id': '/redfish/v1/Systems' } }],
      ['/redfish/v1/Chassis', { Members: Array.from({ length: 32 }, (_, i) => ({ '@odata.id': `/redfish/v1/Chassis/${i}` })) }],
      ['/redfish/v1/Systems', { Members: [{ '@odata.id': '/redfish/v1/Systems/1' }] }],
      [
        '/redfish/v1/Systems/1',
        { '@odata.id': '/redfish/v1/Systems/1', Status: { Health: 'OK' }, LogServices: { '@odata.id': '/redfish/v1/Systems/1/LogServices' } },
      ],
      ['/redfish/v1/Systems/1/LogServices', { Members: [{ '@odata.id': SEL }] }],
      [SEL, { '@odata.id': SEL, Entries: { '@odata.id': `${SEL}/Entries` } }],
      [`${SEL}/Entries`, { Members: [selEntry(1, now, 'Critical', 'CPU 1 machine check')] }],
    ]);
    const fake = {
      async get(path: string): Promise<Doc> {
        const chassis = /^\/redfish\/v1\/Chassis\/(\d+)(.*)$/.exec(path);
        if (chassis) {
          const base = `/redfish/v1/Chassis/${chassis[1]}`;
          if (chassis[2] === '') return { '@odata.id': base, ThermalSubsystem: { '@odata.id': `${base}/ThermalSubsystem` } };
          if (chassis[2] === '/ThermalSubsystem') return { Fans: { '@odata.id': `${base}/ThermalSubsystem/Fans` } };
          if (chassis[2] === '/ThermalSubsystem/Fans')
            return { Members: Array.from({ length: 32 }, (_, i) => ({ '@odata.id': `${base}/ThermalSubsystem/Fans/${i}` })) };
          return { '@odata.id': path, Name: `Fan ${path.split('/').pop()}`, Status: { State: 'Enabled', Health: 'OK' } };
        }
        const doc = docs.get(path);
        if (!doc) throw new Error(`404 ${path}`);
        return doc;
      },
    };
    const poll = await pollRedfish(fake);
    expect(poll.entries.map((e) => e.message)).toEqual(['CPU 1 machine check']);
    expect(poll.problems.join('\n')).toMatch(/request budget/);
  });

  it('a BMC answering every request just inside the timeout is cut off at the poll deadline', async () => {
    let requests = 0;
    const slowMs = 100;
    let delayMs = slowMs;
    const server = createServer((req, res) => {
      requests += 1;
      const p = (req.url ?? '').split('?')[0]!;
      const ids = (base: string) => ({ Members: Array.from({ length: 32 }, (_, i) => ({ '@odata.id': `${base}/${i}` })) });
      const body =
        p === '/redfish/v1'
          ? { Chassis: { '@odata.id': '/redfish/v1/Chassis' }, Systems: { '@odata.id': '/redfish/v1/Systems' } }
          : p === '/redfish/v1/Chassis' || p === '/redfish/v1/Systems'
            ? ids(p)
            : { '@odata.id': p, Status: { Health: 'OK' }, Thermal: { '@odata.id': `${p}/Thermal` }, LogServices: { '@odata.id': `${p}/LogServices` } };
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(body));
      }, delayMs);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new RedfishClient({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      auth: 'none',
      timeoutMs: 1_000,
      maxBodyBytes: 1 << 20,
      maxSockets: 2,
    });
    const limits: RedfishPollLimits = { maxMembers: 32, maxRequests: 200, concurrency: 2, maxLogPages: 4, maxLogEntries: 500, deadlineMs: 1_500 };
    // At 100 ms a request, two at a time, 1.5 s holds 30 requests, and a few in flight at the deadline.
    const withinDeadline = limits.concurrency * (limits.deadlineMs / slowMs) + 2 * limits.concurrency;
    try {
      // The same walk answered at once, with a deadline it cannot reach, costs far more: the count can tell.
      delayMs = 0;
      const whole = await pollRedfish(client, { ...limits, deadlineMs: 600_000 });
      expect(whole.problems.join('\n')).not.toMatch(/poll deadline/);
      expect(requests).toBeGreaterThan(3 * withinDeadline);
      requests = 0;
      delayMs = slowMs;
      const started = Date.now();
      const poll = await pollRedfish(client, limits);
      const took = Date.now() - started;
      expect(poll.problems.join('\n')).toMatch(/poll deadline of 1500 ms/);
      // The bound is on requests, which a slow machine only lowers. The time is a loose ceiling on
      // the poll's class: without its deadline, a BMC answering each request just inside the 1 s
      // timeout holds it for 100 s (200 requests, two at a time).
      expect(requests).toBeLessThanOrEqual(withinDeadline);
      expect(took).toBeLessThan(20 * limits.deadlineMs);
    } finally {
      await client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('collect bmc keeps its secrets', () => {
  it('a --targets line with credentials and junk is refused without echoing the password', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-bmc-targets-'));
    const file = join(dir, 'targets');
    writeFileSync(file, 'h1 https://root:Bmc0S3cret@10.0.0.5 rack12\n');
    const withUrl = await runCli(['collect', 'bmc', '--targets', file, '--auth', 'none']);
    expect(withUrl.code).not.toBe(0);
    expect(withUrl.stderr).toContain(`${file}:1`);
    expect(withUrl.stderr).toContain('https://***@10.0.0.5');
    expect(withUrl.stderr).not.toContain('Bmc0S3cret');
    writeFileSync(file, 'h1 root:Bmc0S3cret@10.0.0.5\n');
    const noScheme = await runCli(['collect', 'bmc', '--targets', file, '--auth', 'none']);
    expect(noScheme.code).not.toBe(0);
    expect(noScheme.stderr).toContain(`${file}:1`);
    expect(noScheme.stderr).not.toContain('Bmc0S3cret');
  });

  it('refuses an ipmitool password in every form: -P X, -PX, -P=X, -EPX, --password', async () => {
    for (const args of [
      '-I lanplus -H bmc -U admin -PS3cret',
      '-U admin -P=S3cret',
      '-I lanplus -EPS3cret',
      '--password S3cret',
      '--password=S3cret',
      '-H bmc -P S3cret',
      '-H bmc -k S3cretKg',
    ]) {
      const run = await runCli(['collect', 'bmc', '--ipmitool', '--ipmitool-path', '/bin/false', '--ipmitool-args', args, '--log-level', 'silent']);
      expect(run.code, args).not.toBe(0);
      expect(run.stderr, args).toMatch(/--ipmitool-args: .* puts (the password|a key) where `ps` shows it/);
      expect(run.stderr, args).not.toContain('S3cret');
    }
  });

  it('refuses credentials over plain http:// unless --insecure-http is given', async () => {
    const env = { GPUALERT_BMC_USERNAME: 'root', GPUALERT_BMC_PASSWORD: 'S3cret' };
    const refused = await runCli(['collect', 'bmc', '--redfish', 'http://127.0.0.1:9'], { env: cleanEnv(env) });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('--insecure-http');
    const basic = () =>
      new RedfishClient({
        url: 'http://127.0.0.1:9',
        auth: 'basic',
        credentials: { username: 'root', password: 'S3cret' },
        timeoutMs: 1_000,
        maxBodyBytes: 1 << 20,
        maxSockets: 1,
      });
    expect(basic).toThrow(/in clear/);
    const allowed = new RedfishClient({
      url: 'http://127.0.0.1:9',
      auth: 'basic',
      credentials: { username: 'root', password: 'S3cret' },
      timeoutMs: 1_000,
      maxBodyBytes: 1 << 20,
      maxSockets: 1,
      insecureHttp: true,
    });
    await allowed.close();
    // Without credentials plain http is fine.
    await new RedfishClient({ url: 'http://127.0.0.1:9', auth: 'none', timeoutMs: 1_000, maxBodyBytes: 1 << 20, maxSockets: 1 }).close();
  });
});
