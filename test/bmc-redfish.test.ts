import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { MemoryBus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { certificateFingerprint, pollRedfish, RedfishClient, redfishSource, startBmcCollector, type RedfishClientOptions } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { BmcEventData, HostSampleData, parseEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { cleanEnv, startCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

/**
 * `collect bmc` against DMTF's public-rackmount1 mockup (test/fixtures/bmc/redfish/README.md),
 * served from loopback by a small Redfish service with sessions and basic auth; faults are
 * injected by editing the served JSON in memory.
 */

const MOCKUP = new URL('./fixtures/bmc/redfish/public-rackmount1/', import.meta.url).pathname;
const USER = 'gpualert-test';
const PASSWORD = 'p4ss-w0rd-never-logged';
type Doc = Record<string, any>;

/** Every mockup file, keyed by its Redfish path (`/redfish/v1/Chassis/1U`). */
function loadMockup(): Map<string, Doc> {
  const docs = new Map<string, Doc>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name === 'index.json') {
        const rel = relative(MOCKUP, dir).split('\\').join('/');
        docs.set(rel ? `/redfish/v1/${rel}` : '/redfish/v1', JSON.parse(readFileSync(path, 'utf8')) as Doc);
      }
    }
  };
  walk(MOCKUP);
  return docs;
}

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly authorized: boolean;
}

class MockBmc {
  readonly docs = loadMockup();
  readonly seen: Seen[] = [];
  readonly sessions = new Map<string, string>();
  private nextSession = 1;

  handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').replace(/\/$/, '');
      const token = req.headers['x-auth-token'];
      const basic = req.headers.authorization === `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
      const authorized = basic || (typeof token === 'string' && [...this.sessions.values()].includes(token));
      this.seen.push({ method: req.method ?? '', path, authorized });
      const send = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      };
      if (req.method === 'POST' && path === '/redfish/v1/SessionService/Sessions') {
        const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Doc;
        if (body.UserName !== USER || body.Password !== PASSWORD) return send(401, { error: 'bad credentials' });
        const id = String(this.nextSession++);
        const t = `token-${id}-${Math.random().toString(36).slice(2)}`;
        this.sessions.set(id, t);
        return send(
          201,
          { '@odata.id': `/redfish/v1/SessionService/Sessions/${id}` },
          { 'x-auth-token': t, location: `/redfish/v1/SessionService/Sessions/${id}` },
        );
      }
      if (!authorized) return send(401, { error: 'unauthorized' });
      if (req.method === 'DELETE') {
        const id = path.split('/').pop()!;
        return this.sessions.delete(id) ? send(204) : send(404);
      }
      // Skip tokens (the mockup's Entries advertise one) are not served: a real BMC's 404 to them happens.
      const doc = path.includes('?') ? undefined : this.docs.get(path);
      return doc ? send(200, doc) : send(404, { error: 'not found' });
    });
  }

  doc(path: string): Doc {
    const d = this.docs.get(path);
    if (!d) throw new Error(`no mockup document at ${path}`);
    return d;
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let tlsMaterial: { key: string; cert: string } | undefined;
/** A self-signed certificate for 127.0.0.1, made by openssl for this run. */
function selfSigned(): { key: string; cert: string } {
  if (tlsMaterial) return tlsMaterial;
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-bmc-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=bmc.test',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  tlsMaterial = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  return tlsMaterial;
}

async function serve(bmc: MockBmc, tls: boolean): Promise<string> {
  const server = tls ? createHttpsServer(selfSigned(), (q, s) => bmc.handle(q, s)) : createHttpServer((q, s) => bmc.handle(q, s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function clientOptions(url: string, extra: Partial<RedfishClientOptions> = {}): RedfishClientOptions {
  // The plain-http mock carries test credentials only: allowed explicitly, as `--insecure-http` does.
  return {
    url,
    auth: 'session',
    credentials: { username: USER, password: PASSWORD },
    timeoutMs: 5_000,
    maxBodyBytes: 1 << 20,
    maxSockets: 2,
    ...(url.startsWith('http:') ? { insecureHttp: true } : {}),
    ...extra,
  };
}

async function pollOnce(url: string, extra: Partial<RedfishClientOptions> = {}) {
  const client = new RedfishClient(clientOptions(url, extra));
  cleanups.push(() => client.close());
  await client.open();
  const poll = await pollRedfish(client);
  // The sample is what goes on the bus: it must pass the envelope schema as it stands.
  expect(HostSampleData.safeParse(poll.sample).success).toBe(true);
  for (const e of poll.entries) expect(BmcEventData.safeParse(e).success).toBe(true);
  return poll;
}

const fanPath = (bay: string) => `/redfish/v1/Chassis/1U/ThermalSubsystem/Fans/${bay}`;
const psuPath = (bay: string) => `/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/${bay}`;

describe('collect bmc over Redfish, against DMTF public-rackmount1', () => {
  it('reads the ThermalSubsystem fans and metrics, PowerSubsystem PSUs, system health and logs over pinned TLS with a session', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, true);
    const poll = await pollOnce(url, { tls: { fingerprint256: certificateFingerprint(selfSigned().cert) } });

    const bay1 = bmc.doc(fanPath('Bay1'));
    expect(poll.sample.fans).toContainEqual({ name: bay1.Name, rpm: bay1.SpeedPercent.SpeedRPM, percent: bay1.SpeedPercent.Reading, health: 'ok' });
    expect(poll.sample.fans).toHaveLength(bmc.doc('/redfish/v1/Chassis/1U/ThermalSubsystem/Fans').Members.length);
    const metrics = bmc.doc('/redfish/v1/Chassis/1U/ThermalSubsystem/ThermalMetrics');
    expect(poll.sample.temperatures).toContainEqual(expect.objectContaining({ location: 'inlet', celsius: metrics.TemperatureSummaryCelsius.Intake.Reading }));
    expect(poll.sample.temperatures).toContainEqual(
      expect.objectContaining({ location: 'exhaust', celsius: metrics.TemperatureSummaryCelsius.Exhaust.Reading }),
    );
    const psu1 = bmc.doc(psuPath('Bay1'));
    expect(poll.sample.psus).toContainEqual({
      name: psu1.Name,
      health: 'warning',
      state: 'enabled',
      watts: bmc.doc(`${psuPath('Bay1')}/Metrics`).OutputPowerWatts.Reading,
    });
    // Bay 2 is Absent in the mockup, and its group needs 1 of 2: no spare, as the group's UnavailableOffline says.
    expect(poll.sample.psus).toContainEqual(expect.objectContaining({ name: bmc.doc(psuPath('Bay2')).Name, state: 'absent' }));
    expect(poll.sample.psu_redundancy?.[0]?.state).toBe('lost');
    expect(poll.sample.system_health).toBe('ok');
    // Both log services: the system's SEL and the manager's event log; the advertised next page 404s and ends the paging.
    const sel = bmc.doc('/redfish/v1/Systems/437XR1138R2/LogServices/Log1/Entries').Members as Doc[];
    const bmcLog = bmc.doc('/redfish/v1/Managers/BMC/LogServices/Log/Entries').Members as Doc[];
    expect(poll.entries).toHaveLength(sel.length + bmcLog.length);
    expect(poll.entries).toContainEqual(
      expect.objectContaining({
        entry_id: sel[0]!.Id,
        log: '/redfish/v1/Systems/437XR1138R2/LogServices/Log1',
        severity: 'critical',
        created: sel[0]!.Created,
        message: sel[0]!.Message,
      }),
    );
    expect(poll.problems.some((p) => p.includes('skiptoken'))).toBe(true);
    // Every resource read with the session's token, none without.
    expect(bmc.seen.filter((s) => s.method === 'GET').every((s) => s.authorized)).toBe(true);
  });

  it('sees a fan fail: health Critical and 0 RPM where it read OK before', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, false);
    const before = await pollOnce(url);
    const name = bmc.doc(fanPath('Bay2')).Name as string;
    expect(before.sample.fans?.find((f) => f.name === name)).toMatchObject({ health: 'ok', rpm: bmc.doc(fanPath('Bay2')).SpeedPercent.SpeedRPM });

    const fan = bmc.doc(fanPath('Bay2'));
    fan.Status = { State: 'Enabled', Health: 'Critical' };
    fan.SpeedPercent = { ...fan.SpeedPercent, Reading: 0, SpeedRPM: 0 };
    const after = await pollOnce(url);
    expect(after.sample.fans?.find((f) => f.name === name)).toEqual({ name, rpm: 0, percent: 0, health: 'critical' });
    // The fan's redundancy group (Bay1 + Bay2, 1 needed) is down to its last fan.
    expect(after.sample.fan_redundancy?.[0]?.state).toBe('lost');
    expect(before.sample.fan_redundancy?.[0]?.state).toBe('full');
  });

  it('sees a PSU lost: redundancy full with both bays serving, lost when one goes offline', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, false);
    // A healthy pair first: Bay 2 fitted like Bay 1, both OK, the group enabled.
    const bay1 = bmc.doc(psuPath('Bay1'));
    bay1.Status = { State: 'Enabled', Health: 'OK' };
    bmc.docs.set(psuPath('Bay2'), { ...structuredClone(bay1), Id: 'Bay2', Name: 'Power Supply Bay 2', '@odata.id': psuPath('Bay2'), Metrics: undefined });
    const group = bmc.doc('/redfish/v1/Chassis/1U/PowerSubsystem').PowerSupplyRedundancy[0] as Doc;
    group.Status = { State: 'Enabled', Health: 'OK' };
    const healthy = await pollOnce(url);
    expect(healthy.sample.psu_redundancy).toEqual([expect.objectContaining({ state: 'full', health: 'ok' })]);

    bmc.doc(psuPath('Bay2')).Status = { State: 'UnavailableOffline', Health: 'Critical' };
    const lost = await pollOnce(url);
    expect(lost.sample.psus).toContainEqual(expect.objectContaining({ name: 'Power Supply Bay 2', health: 'critical', state: 'disabled' }));
    expect(lost.sample.psu_redundancy).toEqual([expect.objectContaining({ state: 'lost' })]);
  });

  it('reads the legacy Thermal and Power resources when the chassis has no subsystems', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, false);
    const chassis = bmc.doc('/redfish/v1/Chassis/1U');
    delete chassis.ThermalSubsystem;
    delete chassis.PowerSubsystem;
    const poll = await pollOnce(url, { auth: 'basic' });
    const thermal = bmc.doc('/redfish/v1/Chassis/1U/Thermal');
    expect(poll.sample.fans?.map((f) => [f.name, f.rpm])).toEqual((thermal.Fans as Doc[]).map((f) => [f.Name, f.Reading]));
    const intake = (thermal.Temperatures as Doc[]).find((t) => t.PhysicalContext === 'Intake')!;
    expect(poll.sample.temperatures).toContainEqual({ name: intake.Name, celsius: intake.ReadingCelsius, location: 'inlet', health: 'ok' });
    // CPU2 Temp is Disabled in the mockup: no reading, no sensor.
    expect(poll.sample.temperatures?.some((t) => t.name === 'CPU2 Temp')).toBe(false);
    const power = bmc.doc('/redfish/v1/Chassis/1U/Power');
    expect(poll.sample.psus).toEqual([
      { name: power.PowerSupplies[0].Name, health: 'warning', watts: power.PowerSupplies[0].LastPowerOutputWatts, state: 'enabled' },
    ]);
    expect(poll.sample.fan_redundancy).toEqual([{ name: 'BaseBoard System Fans', state: 'full', health: 'ok' }]);
    // Basic auth: no session was opened.
    expect(bmc.seen.some((s) => s.method === 'POST')).toBe(false);
  });

  it("publishes a new SEL entry once as a bmc.event, and none of the mockup's years-old entries", async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, false);
    const bus = new MemoryBus();
    await bus.ensureTopics(Object.values(TOPICS));
    const source = redfishSource(clientOptions(url));
    const collector = startBmcCollector({
      bus,
      store: new MemoryStore(),
      targets: [{ host: 'gpu-node-7', source }],
      intervalMs: 40,
      log: createLogger({ name: 'test', level: 'silent' }),
    });
    cleanups.push(() => collector.stop());
    const events = async () =>
      (await bus.read(TOPICS.bmcEvents)).map((m) => parseEnvelope(m.value)).map((r) => (r.ok ? (r.value as EnvelopeOf<'bmc.event'>) : undefined));
    const waitPolls = async (n: number) => {
      const deadline = Date.now() + 30_000;
      while (collector.stats.polls < n) {
        if (Date.now() > deadline) throw new Error(`only ${collector.stats.polls} polls`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await waitPolls(2);
    expect(await events()).toEqual([]);
    const samples = await bus.read(TOPICS.hostSamples);
    expect(samples.length).toBeGreaterThanOrEqual(2);

    const entries = bmc.doc('/redfish/v1/Systems/437XR1138R2/LogServices/Log1/Entries');
    const created = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    entries.Members.push({
      ...structuredClone(entries.Members[0]),
      '@odata.id': `${entries['@odata.id']}/3`,
      Id: '3',
      Name: 'Log Entry 3',
      Created: created,
      Severity: 'Critical',
      Message: 'Fan 2 failed',
      SensorType: 'Fan',
      MessageId: '0x04FF01',
    });
    const seenAt = collector.stats.polls;
    await waitPolls(seenAt + 3);
    const published = await events();
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({
      host: 'gpu-node-7',
      type: 'bmc.event',
      ts: created,
      data: { entry_id: '3', severity: 'critical', message: 'Fan 2 failed', sensor: 'Fan', code: '0x04FF01', created },
    });
  });

  it('deletes its session on close, and never sends credentials to a BMC whose certificate does not match the pin', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, true);
    const source = redfishSource(clientOptions(url, { tls: { ca: selfSigned().cert } }));
    await source.poll();
    expect(bmc.sessions.size).toBe(1);
    await source.close();
    expect(bmc.sessions.size).toBe(0);
    expect(bmc.seen.some((s) => s.method === 'DELETE' && s.authorized)).toBe(true);

    const before = bmc.seen.length;
    const wrongPin = redfishSource(clientOptions(url, { tls: { fingerprint256: 'AA'.repeat(32) } }));
    cleanups.push(() => wrongPin.close());
    await expect(wrongPin.poll()).rejects.toMatchObject({ kind: 'unreachable', message: expect.stringContaining('fingerprint') });
    // Not one HTTP request reached it: the check happens before the session's POST.
    expect(bmc.seen.length).toBe(before);
    // Nor with no pin at all: a self-signed BMC is refused by the system's CAs.
    const unpinned = redfishSource(clientOptions(url));
    cleanups.push(() => unpinned.close());
    await expect(unpinned.poll()).rejects.toMatchObject({ kind: 'unreachable' });
    expect(bmc.seen.length).toBe(before);
  });

  it('opens a new session when the BMC has expired the old one', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, false);
    const source = redfishSource(clientOptions(url));
    cleanups.push(() => source.close());
    await source.poll();
    bmc.sessions.clear();
    const again = await source.poll();
    expect(again.sample.fans?.length).toBeGreaterThan(0);
    expect(bmc.seen.filter((s) => s.method === 'POST')).toHaveLength(2);
    expect(bmc.sessions.size).toBe(1);
  });

  it('keeps the password out of errors and logs when the BMC refuses it', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, false);
    const lines: string[] = [];
    const log = createLogger({
      name: 'test',
      level: 'debug',
      destination: new Writable({
        write(chunk: Buffer, _e, cb) {
          lines.push(chunk.toString());
          cb();
        },
      }),
    });
    const bus = new MemoryBus();
    await bus.ensureTopics(Object.values(TOPICS));
    const source = redfishSource(clientOptions(url, { credentials: { username: USER, password: `${PASSWORD}-wrong` } }));
    const collector = startBmcCollector({ bus, store: new MemoryStore(), targets: [{ host: 'h1', source }], intervalMs: 1_000, log });
    cleanups.push(() => collector.stop());
    // The failure is counted before its sample is published: wait for the sample itself.
    await waitFor(async () => (await bus.read(TOPICS.hostSamples)).length > 0, "the failed poll's host.sample", 30_000);
    const sample = parseEnvelope((await bus.read(TOPICS.hostSamples))[0]!.value);
    expect(sample.ok && sample.value.type === 'host.sample' ? sample.value.data.error : undefined).toMatchObject({
      code: 'command_failed',
      message: expect.stringContaining('401'),
    });
    expect(lines.join('')).toContain('bmc_poll_failed');
    expect(lines.join('')).not.toContain(PASSWORD);
    expect(JSON.stringify(sample)).not.toContain(PASSWORD);
  });

  it('bounds what one BMC can cost: a body past the limit fails, a collection of 10,000 members is followed 32 deep', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, false);
    const fans = bmc.doc('/redfish/v1/Chassis/1U/ThermalSubsystem/Fans');
    fans.Members = Array.from({ length: 10_000 }, (_, i) => ({ '@odata.id': `${fanPath('Bay1')}?copy=${i}` }));
    const poll = await pollOnce(url);
    const fanRequests = bmc.seen.filter((s) => s.path.startsWith(`${fanPath('Bay1')}?`)).length;
    expect(fanRequests).toBe(32);
    expect(poll.problems.length).toBeGreaterThanOrEqual(32);

    bmc.doc('/redfish/v1/Chassis').Padding = 'x'.repeat(2 << 20);
    const client = new RedfishClient(clientOptions(url));
    cleanups.push(() => client.close());
    await client.open();
    await expect(client.get('/redfish/v1/Chassis')).rejects.toMatchObject({ kind: 'unparseable', message: expect.stringContaining('over') });
    // A link off the BMC is never followed with the session token.
    await expect(client.get('https://elsewhere.example/redfish/v1')).rejects.toMatchObject({ message: expect.stringContaining('off the BMC') });
  });
});

describe('gpualert collect bmc, the command', () => {
  it('polls the mockup BMC and publishes its host.sample to Kafka, credentials from the environment', async () => {
    const bmc = new MockBmc();
    const url = await serve(bmc, true);
    const prefix = `${uniqueName('bmc')}.`;
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-bmc-ca-'));
    const caFile = join(dir, 'bmc.pem');
    writeFileSync(caFile, selfSigned().cert);
    const cli = startCli(
      [
        'collect',
        'bmc',
        '--redfish',
        url,
        '--ca',
        caFile,
        '--host',
        'gpu-node-9',
        '--interval',
        '1s',
        '--kafka-brokers',
        inject('kafkaBrokers'),
        '--topic-prefix',
        prefix,
        '--log-format',
        'json',
      ],
      cleanEnv({ GPUALERT_BMC_USERNAME: USER, GPUALERT_BMC_PASSWORD: PASSWORD }),
    );
    cleanups.push(async () => {
      if (cli.exitCode === null) {
        cli.kill('SIGTERM');
        await new Promise((r) => cli.once('close', r));
      }
    });
    const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix });
    cleanups.push(() => bus.close());
    let samples: EnvelopeOf<'host.sample'>[] = [];
    await waitFor(
      async () => {
        samples = (await bus.read(TOPICS.hostSamples).catch(() => []))
          .map((m) => parseEnvelope(m.value))
          .flatMap((r) => (r.ok && r.value.type === 'host.sample' ? [r.value] : []));
        return samples.length > 0;
      },
      'a host.sample on Kafka',
      60_000,
    );
    expect(samples[0]).toMatchObject({ host: 'gpu-node-9', source: 'collector-bmc/0.1.0', data: { origin: 'redfish', system_health: 'ok' } });
    expect(samples[0]!.data.fans?.length).toBeGreaterThan(0);
    cli.kill('SIGTERM');
    await new Promise((r) => cli.once('close', r));
    // Stopping closed the session it opened, and the log never held the password.
    expect(bmc.sessions.size).toBe(0);
    expect(cli.output()).toContain('bmc_collector_started');
    expect(cli.output()).not.toContain(PASSWORD);
  });
});
