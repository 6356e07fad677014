import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { locationByName, parseSdr, parseSel, pollRedfish, RedfishClient } from '@gpualert/collectors';
import { HostSampleData, parseEnvelope } from '@gpualert/schema';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './infra/run-cli.ts';

/**
 * BMCs of several vendors: `ipmitool sensor`, `sdr list`, `sdr elist all` and `sel list` as pasted
 * in public issues and kept in open-source tests (test/fixtures/bmc/ipmitool/README.md), and Redfish
 * resources of Dell iDRAC 9, HPE iLO 5 and 6, a Supermicro H12 board, NVIDIA's HGX baseboard and DMTF's Sensor mockups
 * (the README.md beside each in test/fixtures/bmc/redfish/), served from loopback. Expected locations are the vendors'
 * own words: Redfish's PhysicalContext where the BMC gives one, else what the sensor's name says.
 */

const IPMI = new URL('./fixtures/bmc/ipmitool/', import.meta.url).pathname;
const REDFISH = new URL('./fixtures/bmc/redfish/', import.meta.url).pathname;
const ipmi = (name: string) => readFileSync(join(IPMI, name), 'utf8');
type Doc = Record<string, any>;
const redfish = (file: string): Doc => JSON.parse(readFileSync(join(REDFISH, file), 'utf8')) as Doc;

describe('temperature locations by vendor naming', () => {
  it.each([
    // Supermicro, Dell, Lenovo: CPU1 Temp was `other` while the match wanted the word "cpu" alone.
    ['CPU1 Temp', 'cpu'],
    ['CPU Temp', 'cpu'],
    ['02-CPU 1', 'cpu'],
    ['02-CPU 1 PkgTmp', 'cpu'],
    ['TEMP_CPU0', 'cpu'],
    // Lenovo XClarity (XCC) names, as its sensors print them in centreon/centreon-documentation PR 3940.
    ['CPU 1 Temp', 'cpu'],
    ['DIMM 2 Temp', 'other'],
    ['01-Inlet Ambient', 'inlet'],
    ['Inlet Temp', 'inlet'],
    ['System Board Inlet Temp', 'inlet'],
    ['Ambient Temp', 'inlet'],
    ['Exhaust Temp', 'exhaust'],
    ['MB Outlet Temp', 'exhaust'],
    ['GPU1 Temp', 'gpu'],
    ['HGX_GPU_SXM_1_TEMP_0', 'gpu'],
    ['44-P/S 2 Zone', 'psu'],
    ['PSU1 Temp', 'psu'],
    ['PS1 Temp', 'psu'],
    // Memory and voltage regulators named after their socket are not the CPU.
    ['04-P1 DIMM 1-6', 'other'],
    ['08-P1 Mem Zone', 'other'],
    ['VRMCpu1 Temp', 'other'],
    ['Vcpu1VRM Temp', 'other'],
    ['CPU1 VRD Temp', 'other'],
    ['PCH Temp', 'other'],
    ['System Temp', 'other'],
    ['Peripheral Temp', 'other'],
  ])('%s → %s', (name, location) => {
    expect(locationByName(name)).toBe(location);
  });
});

describe('ipmitool sensor (10 columns)', () => {
  it('HPE DL360p Gen8: inlet and both CPUs by name, DIMM zones other, the two discrete rows said once', () => {
    const { sample, problems } = parseSdr(ipmi('sensor-hpe-dl360p-g8.txt'));
    expect(HostSampleData.safeParse(sample).success).toBe(true);
    expect(sample.temperatures).toEqual([
      { name: '01-Inlet Ambient', celsius: 32, location: 'inlet', health: 'ok' },
      { name: '02-CPU 1', celsius: 40, location: 'cpu', health: 'ok' },
      { name: '03-CPU 2', celsius: 40, location: 'cpu', health: 'ok' },
      { name: '04-P1 DIMM 1-6', celsius: 43, location: 'other', health: 'ok' },
      { name: '05-P1 DIMM 7-12', celsius: 43, location: 'other', health: 'ok' },
      { name: '06-P2 DIMM 1-6', celsius: 45, location: 'other', health: 'ok' },
      { name: '07-P2 DIMM 7-12', celsius: 43, location: 'other', health: 'ok' },
      { name: '08-P1 Mem Zone', celsius: 41, location: 'other', health: 'ok' },
    ]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ line: 1, reason: expect.stringMatching(/raw bits.*\(2 lines\)$/) });
    expect(problems[0]?.text).toMatch(/^UID Light/);
  });

  it('`gpualert parse bmc` reads a saved `ipmitool sensor`: one host.sample, the discrete rows said once on stderr', async () => {
    const run = await runCli(['parse', 'bmc', join(IPMI, 'sensor-hpe-dl360p-g8.txt'), '--host', 'dl360p']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const envelope = parseEnvelope(lines[0]!);
    expect(envelope.ok && envelope.value.type === 'host.sample' && envelope.value.host).toBe('dl360p');
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/sensor-hpe-dl360p-g8\.txt:1: discrete .*\(2 lines\): UID Light/)]);
  });

  it('a two-socket board: CPU1 Temp and CPU2 Temp are CPUs, the board and VRM sensors are not', () => {
    const { sample, problems } = parseSdr(ipmi('sensor-two-socket-inxi.txt'));
    expect(problems).toEqual([]);
    expect(sample.temperatures?.filter((t) => t.location === 'cpu')).toEqual([
      { name: 'CPU1 Temp', celsius: 33, location: 'cpu', health: 'ok' },
      { name: 'CPU2 Temp', celsius: 31, location: 'cpu', health: 'ok' },
    ]);
    expect(sample.temperatures).toHaveLength(10);
    expect(sample.temperatures?.find((t) => t.name === 'Vcpu1VRM Temp')?.location).toBe('other');
  });

  it('rows reading `na` (sensor absent) are not read and not reported as 0', () => {
    const { sample, problems } = parseSdr(ipmi('sensor-supermicro-na.txt'));
    expect(problems).toEqual([]);
    expect(sample.temperatures?.map((t) => t.name)).not.toContain('M2NVMeSSD Temp1');
    expect(sample.temperatures).toHaveLength(8);
    expect(sample.temperatures?.[0]).toEqual({ name: 'CPU Temp', celsius: 31, location: 'cpu', health: 'ok' });
  });

  it('PSU watts from PSn_Power, a thermal margin left out, eight discrete rows said once', () => {
    const { sample, problems } = parseSdr(ipmi('sensor-discrete-psu-watts.txt'));
    expect(sample.psus).toEqual([
      { name: 'PS1_Power', health: 'ok', watts: 100, state: 'unknown' },
      { name: 'PS2_Power', health: 'ok', watts: 110, state: 'unknown' },
    ]);
    expect(sample.temperatures).toEqual([]);
    expect(problems).toEqual([{ line: 1, text: expect.stringMatching(/^SEL_Status/), reason: expect.stringMatching(/\(8 lines\)$/) }]);
  });

  it('an OpenBMC (IBM Rainier) fan list: every fan in RPM', () => {
    const { sample, problems } = parseSdr(ipmi('sensor-openbmc-rainier-fans.txt'));
    expect(problems).toEqual([]);
    expect(sample.fans).toHaveLength(9);
    expect(sample.fans?.[0]).toEqual({ name: 'fan0_0', rpm: 11900, health: 'ok' });
  });
});

describe('ipmitool sdr list and sdr elist all', () => {
  it('Supermicro `sdr list full`: CPUs by name, a sensor without reading left out, fans in RPM', () => {
    const { sample, problems } = parseSdr(ipmi('sdr-list-full-supermicro.txt'));
    expect(problems).toEqual([]);
    expect(sample.temperatures?.filter((t) => t.location === 'cpu').map((t) => t.name)).toEqual(['CPU1 Temp', 'CPU2 Temp']);
    expect(sample.temperatures?.some((t) => t.name === 'MB_10G Temp')).toBe(false);
    expect(sample.fans).toEqual([
      { name: 'FAN1', rpm: 3400, health: 'ok' },
      { name: 'FAN2', rpm: 3400, health: 'ok' },
    ]);
  });

  it('Dell `sdr elist all`: the one enabled sensor is the system-board ambient (inlet); a PSU ambient on entity 10 would be the PSU', () => {
    const { sample, problems } = parseSdr(ipmi('sdr-elist-all-dell.txt'));
    expect(problems).toEqual([]);
    expect(sample.temperatures).toEqual([{ name: 'Ambient Temp', celsius: 19, location: 'inlet', health: 'ok' }]);
    // The same name on entity 10 (a power supply) is that PSU's, not the room's air.
    const psuAmbient = parseSdr('Ambient Temp     | 07h | ok  | 10.1 | 31 degrees C\n').sample.temperatures;
    expect(psuAmbient).toEqual([{ name: 'Ambient Temp', celsius: 31, location: 'psu', health: 'ok' }]);
  });

  it('IBM System x IMM `sdr list`: Ambient Temp is the inlet, six fan tachs in RPM, Not Readable rows skipped, 118 raw discrete rows said once', () => {
    const { sample, problems } = parseSdr(ipmi('sdr-list-ibm-systemx-imm.txt'));
    expect(HostSampleData.safeParse(sample).success).toBe(true);
    expect(sample.temperatures).toEqual([{ name: 'Ambient Temp', celsius: 20, location: 'inlet', health: 'ok' }]);
    expect(sample.fans).toEqual(
      [
        ['Fan 1A Tach', 2610],
        ['Fan 1B Tach', 1775],
        ['Fan 2A Tach', 2001],
        ['Fan 2B Tach', 1275],
        ['Fan 3A Tach', 2929],
        ['Fan 3B Tach', 2125],
      ].map(([name, rpm]) => ({ name, rpm, health: 'ok' })),
    );
    // `Avg Power | 210 Watts` is the system's draw, not a power supply.
    expect(sample.psus?.some((p) => p.watts === 210)).toBe(false);
    expect(problems).toEqual([{ line: 14, text: 'Fan 1            | 0x00              | ok', reason: expect.stringMatching(/\(118 lines\)$/) }]);
  });

  it('HP DL380 G7 `sdr`: PSU watts and fan percent read; the raw discrete states said once, not taken for PSUs', () => {
    const { sample, problems } = parseSdr(ipmi('sdr-hp-dl380-g7.txt'));
    expect(sample.psus).toEqual([
      { name: 'Power Supply 1', health: 'ok', watts: 35, state: 'unknown' },
      { name: 'Power Supply 2', health: 'ok', watts: 155, state: 'unknown' },
    ]);
    expect(sample.fans).toHaveLength(6);
    expect(sample.fans?.[5]).toEqual({ name: 'Fan 6', rpm: null, percent: 13.72, health: 'ok' });
    expect(problems).toEqual([{ line: 1, text: expect.stringMatching(/^UID Light/), reason: expect.stringMatching(/\(4 lines\)$/) }]);
  });
});

describe('ipmitool sel list', () => {
  it('OpenPOWER firmware progress records: every record, hex ids, BMC time as UTC, informational', () => {
    const { entries, problems } = parseSel(ipmi('sel-list-openpower.txt'));
    expect(problems).toEqual([]);
    expect(entries.map((e) => e.entry_id)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c']);
    expect(entries[0]).toMatchObject({
      created: '2000-01-01T00:15:20.000Z',
      severity: 'info',
      sensor: 'System Firmware Progress #0x05',
      message: 'Motherboard initialization',
      asserted: true,
    });
    expect(entries.every((e) => e.severity === 'info')).toBe(true);
  });
});

// --- Redfish, served from loopback -------------------------------------------------------------

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A BMC serving `docs` by path. The service root, the Chassis collection and the chassis resources
 * that link to the vendor's documents are test glue (`glue`); the documents are the vendor's.
 */
async function pollVendor(chassis: Record<string, Doc>, docs: Record<string, Doc>) {
  const served = new Map<string, Doc>();
  served.set('/redfish/v1', { '@odata.id': '/redfish/v1', Chassis: { '@odata.id': '/redfish/v1/Chassis' } });
  served.set('/redfish/v1/Chassis', { Members: Object.keys(chassis).map((id) => ({ '@odata.id': id })) });
  for (const [id, doc] of Object.entries(chassis)) served.set(id, { '@odata.id': id, ...doc });
  for (const [path, doc] of Object.entries(docs)) served.set(path, doc);
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').replace(/\/$/, '');
    seen.push(path);
    const doc = served.get(path);
    res.writeHead(doc ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(doc ?? { error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const client = new RedfishClient({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    auth: 'basic',
    credentials: { username: 'test', password: 'test-only' },
    timeoutMs: 5_000,
    maxBodyBytes: 1 << 20,
    maxSockets: 2,
    insecureHttp: true,
  });
  cleanups.push(() => client.close());
  await client.open();
  const poll = await pollRedfish(client);
  expect(HostSampleData.safeParse(poll.sample).success).toBe(true);
  return { poll, seen };
}

describe('Redfish from several vendors', () => {
  it('Dell iDRAC 9 (PowerEdge R640): legacy Thermal fans in RPM, CPU1 Temp by its PhysicalContext, the PSU from PowerOutputWatts when LastPowerOutputWatts is null', async () => {
    const thermal = redfish('dell-idrac9/Thermal.json');
    const power = redfish('dell-idrac9/Power.json');
    const { poll } = await pollVendor(
      { '/redfish/v1/Chassis/System.Embedded.1': { Thermal: { '@odata.id': thermal['@odata.id'] }, Power: { '@odata.id': power['@odata.id'] } } },
      { [thermal['@odata.id']]: thermal, [power['@odata.id']]: power },
    );
    expect(poll.problems).toEqual([]);
    expect(poll.sample.fans).toEqual([
      { name: 'System Board Fan1A', rpm: 17760, health: 'ok' },
      { name: 'System Board Fan1B', rpm: 15360, health: 'ok' },
    ]);
    expect(poll.sample.temperatures).toEqual([{ name: 'CPU1 Temp', celsius: 40, location: 'cpu', health: 'ok' }]);
    expect(poll.sample.fan_redundancy).toEqual([{ name: 'System Board Fan Redundancy', state: 'full', health: 'ok' }]);
    expect(poll.sample.psus).toEqual([{ name: 'PS1 Status', health: 'ok', watts: 203, state: 'enabled' }]);
  });

  it('Supermicro (H12 board, legacy Thermal): six fans in RPM, CPU Temp by its PhysicalContext, the VRM it also files under CPU is not the CPU', async () => {
    const thermal = redfish('supermicro-h12/Thermal.json');
    const { poll } = await pollVendor({ '/redfish/v1/Chassis/1': { Thermal: { '@odata.id': thermal['@odata.id'] } } }, { [thermal['@odata.id']]: thermal });
    expect(poll.problems).toEqual([]);
    expect(poll.sample.fans).toEqual([10780, 10920, 10920, 10920, 10780, 10780].map((rpm, i) => ({ name: `FAN${i + 1}`, rpm, health: 'ok' })));
    const at = (location: string) => poll.sample.temperatures?.filter((t) => t.location === location).map((t) => [t.name, t.celsius]);
    // `CPU_VRM Temp` carries PhysicalContext CPU; the board's regulator is read as the socket's VRM, as
    // ipmitool reads the same board's `VRMCpu Temp` (sensor-supermicro-na.txt), not as the CPU at 41 °C.
    expect(at('cpu')).toEqual([['CPU Temp', 63]]);
    expect(poll.sample.temperatures?.find((t) => t.name === 'CPU_VRM Temp')).toEqual({ name: 'CPU_VRM Temp', celsius: 41, location: 'other', health: 'ok' });
    expect(at('other')).toHaveLength(13);
    // The board has no inlet sensor fitted: its `Inlet Temp` is Absent with a reading of 0.
    expect(at('inlet')).toEqual([]);
  });

  it('Supermicro: the Absent `Inlet Temp` (ReadingCelsius 0) is left out, where the same sensor enabled would be an inlet at 0 °C', async () => {
    const thermal = redfish('supermicro-h12/Thermal.json');
    const inletOf = async (doc: Doc) => {
      const { poll } = await pollVendor({ '/redfish/v1/Chassis/1': { Thermal: { '@odata.id': doc['@odata.id'] } } }, { [doc['@odata.id']]: doc });
      return poll.sample.temperatures?.filter((t) => t.location === 'inlet');
    };
    // Enabled on the served copy (the file is not edited): the 0 would be taken for the room's air.
    const enabled = {
      ...thermal,
      Temperatures: (thermal.Temperatures as Doc[]).map((t) => (t.Name === 'Inlet Temp' ? { ...t, Status: { State: 'Enabled' } } : t)),
    };
    expect(await inletOf(enabled)).toEqual([{ name: 'Inlet Temp', celsius: 0, location: 'inlet', health: 'unknown' }]);
    expect(await inletOf(thermal)).toEqual([]);
  });

  it('HPE iLO 5: fans in percent, the inlet by Intake and a PSU zone by PowerSupply, OEM sections passed over', async () => {
    const thermal = redfish('hpe-ilo5/Thermal.json');
    const { poll } = await pollVendor({ '/redfish/v1/Chassis/1': { Thermal: { '@odata.id': thermal['@odata.id'] } } }, { [thermal['@odata.id']]: thermal });
    expect(poll.sample.fans).toEqual(['Fan 1', 'Fan 2', 'Fan 3'].map((name) => ({ name, rpm: null, percent: 23, health: 'ok' })));
    expect(poll.sample.temperatures).toEqual([
      { name: '01-Inlet Ambient', celsius: 19, location: 'inlet', health: 'ok' },
      { name: '44-P/S 2 Zone', celsius: 34, location: 'psu', health: 'ok' },
    ]);
    // No Power link: PSUs were not measured, which is not "no PSUs".
    expect(poll.sample.psus).toBeUndefined();
  });

  it('HPE iLO 6: ThermalSubsystem fans in percent, ThermalMetrics readings placed by their own PhysicalContext', async () => {
    const sub = redfish('hpe-ilo6/ThermalSubsystem.json');
    const docs = Object.fromEntries(
      ['ThermalSubsystem', 'Fans', 'Fan-0', 'ThermalMetrics'].map((f) => {
        const d = redfish(`hpe-ilo6/${f}.json`);
        return [d['@odata.id'] as string, d];
      }),
    );
    const { poll } = await pollVendor({ '/redfish/v1/Chassis/1': { ThermalSubsystem: { '@odata.id': sub['@odata.id'] } } }, docs);
    expect(poll.problems).toEqual([]);
    expect(poll.sample.fans).toEqual([{ name: 'Fan 1', rpm: null, percent: 20, health: 'ok' }]);
    expect(poll.sample.temperatures).toEqual([
      { name: '01-Inlet Ambient', celsius: 19, location: 'inlet', health: 'unknown' },
      { name: '02-CPU 1 PkgTmp', celsius: 42, location: 'cpu', health: 'unknown' },
    ]);
  });

  it('NVIDIA HGX: a GPU chassis with only Sensors gives its GPU temperature; no fans were measured there', async () => {
    const sensor = redfish('nvidia-hgx/HGX_GPU_SXM_1_TEMP_0.json');
    const { poll } = await pollVendor(
      { '/redfish/v1/Chassis/HGX_GPU_SXM_1': { Sensors: { '@odata.id': '/redfish/v1/Chassis/HGX_GPU_SXM_1/Sensors' } } },
      {
        '/redfish/v1/Chassis/HGX_GPU_SXM_1/Sensors': { Members: [{ '@odata.id': sensor['@odata.id'] }] },
        [sensor['@odata.id']]: sensor,
      },
    );
    expect(poll.sample.temperatures).toEqual([{ name: 'HGX GPU SXM 1 TEMP 0', celsius: 34.875, location: 'gpu', health: 'ok' }]);
    expect(poll.sample.fans).toBeUndefined();
  });

  const dmtfSensors = () => {
    const collection = redfish('dmtf-sensors/Sensors.json');
    const docs: Record<string, Doc> = { [collection['@odata.id']]: collection };
    for (const m of collection.Members as { '@odata.id': string }[]) docs[m['@odata.id']] = redfish(`dmtf-sensors/${m['@odata.id'].split('/').pop()}.json`);
    return { collection, docs };
  };

  it('DMTF Sensors: temperatures without a ReadingType are told by `Cel`; fan speed and an Absent PSU sensor are not temperatures', async () => {
    const { collection, docs } = dmtfSensors();
    const { poll } = await pollVendor({ '/redfish/v1/Chassis/1U': { Sensors: { '@odata.id': collection['@odata.id'] } } }, docs);
    expect(poll.sample.temperatures).toEqual([
      // The mockup's CPU reads 44 °C, past its 42 °C UpperCaution: DMTF marks it Warning.
      { name: 'CPU #1 Temperature', celsius: 44, location: 'cpu', health: 'warning' },
      { name: 'DIMM #1 Temperature', celsius: 44, location: 'other', health: 'ok' },
      { name: 'Fan Bay #1 Exhaust Temperature', celsius: 40.5, location: 'exhaust', health: 'ok' },
      { name: 'Front Panel Intake Temperature', celsius: 24.8, location: 'inlet', health: 'ok' },
    ]);
  });

  it('a sensor gone Absent or Disabled is left out; one reading null is there and reads nothing', async () => {
    const { collection, docs } = dmtfSensors();
    const path = (id: string) => `/redfish/v1/Chassis/1U/Sensors/${id}`;
    // Faults injected on the served copies, never the files.
    docs[path('CPU1Temp')] = { ...docs[path('CPU1Temp')], Status: { State: 'Absent' } };
    docs[path('DIMM1Temp')] = { ...docs[path('DIMM1Temp')], Status: { State: 'Disabled' } };
    docs[path('ExhaustTemp')] = { ...docs[path('ExhaustTemp')], Reading: null };
    const { poll } = await pollVendor({ '/redfish/v1/Chassis/1U': { Sensors: { '@odata.id': collection['@odata.id'] } } }, docs);
    expect(poll.sample.temperatures).toEqual([
      { name: 'Fan Bay #1 Exhaust Temperature', celsius: null, location: 'exhaust', health: 'ok' },
      { name: 'Front Panel Intake Temperature', celsius: 24.8, location: 'inlet', health: 'ok' },
    ]);
  });

  it('Sensors are read only when the chassis’ thermal resources gave no temperature', async () => {
    const { collection, docs } = dmtfSensors();
    const thermal = redfish('hpe-ilo5/Thermal.json');
    const chassis = { Thermal: { '@odata.id': thermal['@odata.id'] }, Sensors: { '@odata.id': collection['@odata.id'] } };
    const withTemps = await pollVendor({ '/redfish/v1/Chassis/1': chassis }, { ...docs, [thermal['@odata.id']]: thermal });
    expect(withTemps.seen).not.toContain(collection['@odata.id']);
    // The same chassis whose Thermal lists no temperature: its Sensors are read.
    const bare = { ...thermal, Temperatures: [] };
    const without = await pollVendor({ '/redfish/v1/Chassis/1': chassis }, { ...docs, [thermal['@odata.id']]: bare });
    expect(without.seen).toContain(collection['@odata.id']);
    expect(without.poll.sample.temperatures).toHaveLength(4);
  });
});
