import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromLspciTree } from '@gpualert/kernel-log';
import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { isInert, newEnvelope, type Envelope, type EnvelopeOf, type GpuMetrics, type HostFan, type HostSampleData, type IbPort } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { emptyEngineState, parseFleetState, parseHostState, type EngineState } from './engine-state.ts';
import { DEFAULT_RULES_DIR, loadRuleSet } from './load-rules.ts';
import { replay } from './replay.ts';
import { StreamClock } from './time-policy.ts';
import { syntheticFleet } from '@gpualert/test-support';

const rules = loadRuleSet();
if (!rules.ok) throw new Error(rules.errors.map(formatRuleError).join('\n'));
const catalog = loadXidCatalog();
if (!catalog.ok) throw new Error('catalog');
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;
const HOST = 'gpu-node-000';
const iso = (t: number) => new Date(t).toISOString();
const COOLING = readFileSync(new URL('../../../demo/cooling.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l !== '');

function run(envelopes: Iterable<Envelope>, until?: number): { alerts: EnvelopeOf<'alert'>[]; state: EngineState } {
  const engine = new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
  const state = emptyEngineState();
  const clock = new StreamClock(engine);
  const alerts: EnvelopeOf<'alert'>[] = [];
  let last = 0;
  for (const envelope of envelopes) {
    last = Math.max(last, Date.parse(envelope.ts));
    alerts.push(...clock.judge(state, envelope));
  }
  for (let t = last + 10_000; until !== undefined && t <= until; t += 10_000) alerts.push(...clock.tick(state, t));
  return { alerts, state };
}

const firing = (alerts: EnvelopeOf<'alert'>[], rule?: string) =>
  alerts.filter((a) => a.data.status === 'firing' && (rule === undefined || a.data.rule === rule));
const resolved = (alerts: EnvelopeOf<'alert'>[], rule: string) => alerts.filter((a) => a.data.status === 'resolved' && a.data.rule === rule);

/** GPU samples of one busy, healthy 4-GPU host every 10 s (its clock), from T0 for `minutes`. */
function gpus(minutes: number, host = HOST): Envelope[] {
  return [
    ...syntheticFleet({
      hosts: 1,
      gpusPerHost: 4,
      start: T0,
      minutes,
      seed: 5,
      fault: (_h, g) => ({ ...g, util_pct: 96, processes: 1, pcie_gen: 5, temp_c: 60, power_w: 620, throttle: ['sw_power_cap'] }),
    }),
  ].map((e) => ({ ...e, host }) as Envelope);
}

const fans = (rpms: (number | null)[], health: (i: number) => HostFan['health'] = () => 'ok'): HostFan[] =>
  rpms.map((rpm, i) => ({ name: `FAN${i + 1}`, rpm, health: health(i) }));

function hostSample(t: number, data: Partial<HostSampleData>, host = HOST): Envelope {
  return newEnvelope({ type: 'host.sample', id: `hs-${host}-${t}`, host, source: 'test', ts: iso(t), data: { origin: 'redfish', ...data } });
}

/** One BMC reading every 30 s from T0 for `minutes`, `at(t)` saying what it holds. */
function bmcStream(minutes: number, at: (t: number) => Partial<HostSampleData>): Envelope[] {
  const out: Envelope[] = [];
  for (let t = T0 + 5_000; t < T0 + minutes * MIN; t += 30_000) out.push(hostSample(t, at(t)));
  return out;
}

const merge = (...streams: Envelope[][]) => streams.flat().sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));

describe('the host layer: a cooling incident', () => {
  it('a chassis fan fails and two GPUs warm up: one incident, root cause cooling, in replay', () => {
    const alerts = replay(new Engine(rules.value, catalog.value), COOLING);
    const fired = firing(alerts);
    const fan = fired.filter((a) => a.data.rule === 'host-fan');
    expect(fan).toHaveLength(1);
    const incident = fan[0]!.data.fingerprint;
    expect(fan[0]!.data).toMatchObject({ root_cause: 'cooling', category: 'thermal' });
    expect(fan[0]!.data.summary).toMatch(/FAN3 failed/);
    // The GPUs' heat alerts came (the test would see them), all of GPUs 2 and 3 and all in the fan's incident.
    const heat = fired.filter((a) => a.data.gpu !== undefined);
    expect(new Set(heat.map((a) => a.data.rule))).toEqual(new Set(['gpu-temp-peer', 'gpu-temp-baseline', 'gpu-temp-high']));
    expect(new Set(heat.map((a) => a.data.gpu!.index))).toEqual(new Set([2, 3]));
    for (const a of heat) expect(a.data, a.data.rule).toMatchObject({ incident, root_cause: 'cooling' });
    // One incident: every firing alert of the recording is the fan's or joined it; the healthy host is silent.
    expect(fired.every((a) => a.host === 'gpu-node-000' && (a.data.fingerprint === incident || a.data.incident === incident))).toBe(true);
    // The fan replaced, everything resolves.
    const open = new Set(fired.map((a) => a.data.fingerprint));
    for (const a of alerts) if (a.data.status === 'resolved') open.delete(a.data.fingerprint);
    expect(open).toEqual(new Set());
  });

  it("a GPU hot with its host's cooling fine is not called cooling", () => {
    const envelopes = merge(
      gpus(30).map((e) =>
        e.type === 'gpu.sample' && Date.parse(e.ts) >= T0 + 10 * MIN
          ? { ...e, data: { ...e.data, gpus: e.data.gpus.map((g) => (g.index === 1 ? { ...g, temp_c: 82 } : g)) } }
          : e,
      ),
      bmcStream(30, () => ({ fans: fans([9000, 9100, 9050, 9020]) })),
    );
    const hot = firing(run(envelopes).alerts).filter((a) => a.data.gpu?.index === 1);
    expect(hot.length).toBeGreaterThan(0);
    for (const a of hot) expect(a.data.root_cause).toBeUndefined();
  });

  it("an inlet rise explains its GPUs' heat; the inlet at its own normal (noisy) stays silent", () => {
    const rise = T0 + 20 * MIN;
    const inlet = (t: number) => 24 + ((t / 30_000) % 3) * 0.5 + (t >= rise ? 9 : 0);
    const envelopes = merge(
      gpus(40).map((e) =>
        e.type === 'gpu.sample' && Date.parse(e.ts) >= rise + 2 * MIN
          ? { ...e, data: { ...e.data, gpus: e.data.gpus.map((g) => (g.index === 0 ? { ...g, temp_c: 78 } : g)) } }
          : e,
      ),
      bmcStream(40, (t) => ({
        temperatures: [
          { name: 'Inlet Temp', celsius: inlet(t), location: 'inlet', health: 'ok' },
          { name: 'CPU1', celsius: 70, location: 'cpu', health: 'ok' },
        ],
      })),
    );
    const { alerts } = run(envelopes);
    const fired = firing(alerts);
    const inletAlert = fired.find((a) => a.data.rule === 'host-inlet-temp');
    expect(inletAlert?.data.summary).toMatch(/inlet air at 3[34](\.\d)? °C, \d+(\.\d)? °C above its own normal of 2[45](\.\d)? °C/);
    expect(Date.parse(inletAlert!.ts)).toBeGreaterThanOrEqual(rise);
    const gpu = fired.filter((a) => a.data.gpu?.index === 0);
    expect(gpu.length).toBeGreaterThan(0);
    for (const a of gpu) expect(a.data).toMatchObject({ incident: inletAlert!.data.fingerprint, root_cause: 'cooling' });
    // Before the rise, the same noise gave nothing.
    expect(fired.filter((a) => Date.parse(a.ts) < rise)).toEqual([]);
  });
});

describe('the host layer: what cooling explains', () => {
  const busy = (fault: (g: GpuMetrics, t: number) => GpuMetrics | null, minutes = 30): Envelope[] =>
    [
      ...syntheticFleet({
        hosts: 1,
        gpusPerHost: 4,
        start: T0,
        minutes,
        seed: 5,
        fault: (_h, g, t) => fault({ ...g, util_pct: 96, processes: 1, pcie_gen: 5, temp_c: 60, power_w: 620, throttle: ['sw_power_cap'] }, t),
      }),
    ].map((e) => ({ ...e, host: HOST }) as Envelope);
  const fanDeadFrom = (from: number) =>
    bmcStream(30, (t) => ({ fans: fans([9000, 9000, t >= from ? 0 : 9000, 9000], (i) => (i === 2 && t >= from ? 'critical' : 'ok')) }));

  it("a fan failing after a GPU fell off the bus opens its own cooling incident; the heat it causes joins it, not the Xid's", () => {
    const xid = newEnvelope({
      type: 'kernel.event',
      id: 'x79',
      host: HOST,
      source: 'test',
      ts: iso(T0 + 5 * MIN),
      data: {
        kind: 'xid',
        xid: 79,
        gpu: 0,
        severity: 'critical',
        message: 'NVRM: Xid (PCI:0000:29:00): 79, GPU has fallen off the bus.',
        meaning: 'GPU has fallen off the bus',
      },
    } as never);
    const g = busy((x, t) => (x.index === 0 && t >= T0 + 5 * MIN ? null : { ...x, temp_c: x.index === 3 && t > T0 + 9 * MIN ? 92 : 60 }));
    const fired = firing(run(merge(g, fanDeadFrom(T0 + 7 * MIN), [xid]), T0 + 30 * MIN).alerts);
    const first = fired[0]!;
    expect(first.data.gpu?.index).toBe(0); // the Xid's (or the lost GPU's) incident came first: the test would see the fan join it
    const fan = fired.find((a) => a.data.rule === 'host-fan')!;
    expect(fan.data).toMatchObject({ root_cause: 'cooling' });
    expect(fan.data.incident).toBeUndefined(); // its own incident
    const heat = fired.filter((a) => a.data.gpu?.index === 3);
    expect(heat.length).toBeGreaterThan(0);
    for (const a of heat) expect(a.data, a.data.rule).toMatchObject({ incident: fan.data.fingerprint, root_cause: 'cooling' });
  });

  it('a power-brake slowdown beside a dead fan is not called cooling', () => {
    const g = busy((x, t) => (x.index === 0 && t >= T0 + 6 * MIN ? { ...x, throttle: ['hw_power_brake_slowdown'], power_w: 300 } : x));
    const fired = firing(run(merge(g, fanDeadFrom(T0 + 5 * MIN)), T0 + 30 * MIN).alerts);
    expect(fired.find((a) => a.data.rule === 'host-fan')!.data.root_cause).toBe('cooling');
    const brake = fired.filter((a) => a.data.rule === 'hw-slowdown');
    expect(brake).toHaveLength(1);
    expect(brake[0]!.data.root_cause).toBeUndefined();
  });
});

describe('the host layer: BMC rules', () => {
  it("a fan slower than half its siblings' median for a minute fires, and resolves when it is back", () => {
    const slow = (t: number) => t >= T0 + 10 * MIN && t < T0 + 20 * MIN;
    const { alerts } = run(bmcStream(30, (t) => ({ fans: fans([9000, slow(t) ? 3900 : 9050, 8950, 9100]) })));
    expect(firing(alerts, 'host-fan').map((a) => a.data.summary)).toEqual(['gpu-node-000: fan FAN2 turns at 3900 rpm, its siblings at 9000 rpm']);
    expect(Date.parse(firing(alerts, 'host-fan')[0]!.ts) - (T0 + 10 * MIN)).toBeLessThanOrEqual(90_000);
    expect(resolved(alerts, 'host-fan')).toHaveLength(1);
  });

  it('fans a little apart, and a fan whose speed the BMC does not give, stay silent', () => {
    const { alerts } = run(bmcStream(30, (t) => ({ fans: fans([9000, 7200 + (t % 3) * 100, null, 9100], (i) => (i === 2 ? 'unknown' : 'ok')) })));
    expect(alerts).toEqual([]);
  });

  it('a BMC that renames its failed fan on every poll pages once, whatever it calls it, and its state stays bounded', () => {
    let poll = 0;
    const { alerts, state } = run(
      bmcStream(40, () => {
        poll += 1;
        return { fans: [...fans([9000, 9100, 9050]), { name: `GHOST${poll}`, rpm: 0, health: 'critical' }] }; // a new name every poll
      }),
      T0 + 80 * MIN,
    );
    expect(firing(alerts, 'host-fan').map((a) => a.data.summary)).toEqual(['gpu-node-000: fan GHOST3 failed (0 rpm, health critical)']);
    expect(Date.parse(firing(alerts, 'host-fan')[0]!.ts) - T0).toBeLessThanOrEqual(90_000);
    expect(Object.keys(state.hosts[HOST]!.trackers).length).toBeLessThanOrEqual(2);
    expect(Object.keys(state.hosts[HOST]!.hostLayer!.failedFans!).length).toBeLessThanOrEqual(256);
  });

  it('a dead fan whose sensor then reads nothing (dropped, or no reading) keeps alerting until seen turning, or `missing_for` after', () => {
    const reading = (gone: (t: number) => 'listed' | 'dropped' | 'no reading') =>
      bmcStream(100, (t) => ({
        fans: [1, 2, 3, 4].flatMap((i): HostFan[] => {
          if (i !== 3 || t < T0 + 3 * MIN) return [{ name: `FAN${i}`, rpm: 9000, health: 'ok' }];
          const how = gone(t);
          if (how === 'dropped') return [];
          return [how === 'listed' ? { name: 'FAN3', rpm: 0, health: 'critical' } : { name: 'FAN3', rpm: null, health: 'unknown' }];
        }),
      }));
    for (const how of ['dropped', 'no reading'] as const) {
      const { alerts } = run(reading((t) => (t < T0 + 8 * MIN ? 'listed' : how)));
      expect(firing(alerts, 'host-fan'), how).toHaveLength(1);
      const end = resolved(alerts, 'host-fan');
      expect(end, how).toHaveLength(1); // the bound: an hour after it was last seen failed
      expect(Date.parse(end[0]!.ts) - (T0 + 8 * MIN), how).toBeGreaterThanOrEqual(60 * MIN);
    }
    // Seen turning again, it resolves at once.
    const { alerts } = run(
      reading((t) => (t < T0 + 8 * MIN ? 'listed' : t < T0 + 20 * MIN ? 'dropped' : 'listed')).map((e) => {
        const data = e.data as HostSampleData;
        if (Date.parse(e.ts) < T0 + 20 * MIN) return e;
        return { ...e, data: { ...data, fans: fans([9000, 9000, 9000, 9000]) } } as Envelope;
      }),
    );
    expect(resolved(alerts, 'host-fan').map((a) => Date.parse(a.ts) - (T0 + 20 * MIN))).toEqual([5_000]);
  });

  it('PSU redundancy lost fires; the spare back resolves it', () => {
    const lost = (t: number) => t >= T0 + 5 * MIN && t < T0 + 15 * MIN;
    const { alerts } = run(
      bmcStream(25, (t) => ({
        psus: [
          { name: 'PSU1', health: 'ok', watts: 1700, state: 'enabled' },
          { name: 'PSU2', health: lost(t) ? 'critical' : 'ok', watts: lost(t) ? null : 1700, state: lost(t) ? 'disabled' : 'enabled' },
        ],
        psu_redundancy: [{ name: 'PSU Redundancy', state: lost(t) ? 'lost' : 'full', health: lost(t) ? 'critical' : 'ok' }],
      })),
    );
    expect(
      firing(alerts, 'host-psu-redundancy')
        .map((a) => a.data.summary)
        .sort(),
    ).toEqual(['gpu-node-000: PSU PSU2 failed (disabled)', 'gpu-node-000: PSU redundancy PSU Redundancy lost (health critical)']);
    expect(resolved(alerts, 'host-psu-redundancy')).toHaveLength(2);
  });

  it('a PSU flipping critical/ok on every poll pages (its `for` is not restarted by each ok); one glitch does not', () => {
    const psu = (critical: boolean): Partial<HostSampleData> => ({
      psus: [
        { name: 'PSU1', health: 'ok', watts: 1700, state: 'enabled' },
        { name: 'PSU2', health: critical ? 'critical' : 'ok', watts: 1700, state: 'enabled' },
      ],
    });
    let poll = 0;
    const flips = run(bmcStream(60, () => psu((poll += 1) % 2 === 0)));
    expect(firing(flips.alerts, 'host-psu-redundancy').map((a) => a.data.summary)).toEqual(['gpu-node-000: PSU PSU2 failed (enabled)']);
    expect(Date.parse(firing(flips.alerts, 'host-psu-redundancy')[0]!.ts) - T0).toBeLessThanOrEqual(3 * MIN);
    const glitch = run(bmcStream(60, (t) => psu(t === T0 + 10 * MIN + 5_000)));
    expect(glitch.alerts).toEqual([]);
  });

  it('a critical SEL entry fires once and resolves after an hour of quiet; warnings and deasserts do not', () => {
    const sel = (t: number, severity: 'warning' | 'critical', asserted = true): Envelope =>
      newEnvelope({
        type: 'bmc.event',
        id: `sel-${t}`,
        host: HOST,
        source: 'test',
        ts: iso(t),
        data: { entry_id: String(t), log: 'sel', severity, message: 'Uncorrectable ECC | Asserted', sensor: 'Memory #0x87', asserted },
      });
    const { alerts } = run(
      merge(gpus(90), [sel(T0 + 5 * MIN, 'warning'), sel(T0 + 6 * MIN, 'critical', false), sel(T0 + 10 * MIN, 'critical'), sel(T0 + 12 * MIN, 'critical')]),
    );
    expect(firing(alerts, 'host-bmc-critical').map((a) => [a.ts, a.data.summary])).toEqual([
      [iso(T0 + 10 * MIN), 'gpu-node-000 BMC: Memory #0x87: Uncorrectable ECC | Asserted'],
    ]);
    const end = resolved(alerts, 'host-bmc-critical');
    expect(end).toHaveLength(1);
    expect(Date.parse(end[0]!.ts) - (T0 + 12 * MIN)).toBeGreaterThanOrEqual(60 * MIN);
  });
});

describe('the host layer: broken inlet sensors', () => {
  const temp = (c: number): Partial<HostSampleData> => ({ temperatures: [{ name: 'Inlet Temp', celsius: c, location: 'inlet', health: 'ok' }] });
  const stream = (minutes: number, at: (i: number) => number) => {
    let i = 0;
    return bmcStream(minutes, () => temp(at(i++)));
  };

  it('one 1e6 °C glitch during warm-up is not learned: a later real rise still fires', () => {
    const { alerts, state } = run(
      merge(
        gpus(120),
        stream(120, (i) => (i === 5 ? 1e6 : i < 200 ? 24 + (i % 3) * 0.5 : 40)),
      ),
    );
    expect(state.hosts[HOST]!.hostLayer!.inlet!.mean).toBeLessThan(30);
    // The control: the same stream's rise seen (from reading 200 = 100 min) without the glitch too.
    expect(firing(alerts, 'host-inlet-temp')).toHaveLength(1);
    expect(Date.parse(firing(alerts, 'host-inlet-temp')[0]!.ts)).toBeGreaterThanOrEqual(T0 + 100 * MIN);
  });

  it('an inlet stuck at 1e6 °C pages nothing as heat (no "1000000 °C", no cooling root cause)', () => {
    const { alerts } = run(
      merge(
        gpus(30),
        stream(30, (i) => (i < 40 ? 24 + (i % 3) * 0.5 : 1e6)),
      ),
    );
    expect(firing(alerts, 'host-inlet-temp')).toEqual([]);
    // It would see a real rise at the same moment.
    expect(
      firing(
        run(
          merge(
            gpus(30),
            stream(30, (i) => (i < 40 ? 24 + (i % 3) * 0.5 : 45)),
          ),
        ).alerts,
        'host-inlet-temp',
      ),
    ).toHaveLength(1);
  });
});

describe('the host layer: BMC log entries replayed, old, or in a storm', () => {
  const sel = (t: number, entry: string, sensor: string, created = t, id = `sel-${entry}`): Envelope =>
    newEnvelope({
      type: 'bmc.event',
      id,
      host: HOST,
      source: 'test',
      ts: iso(t),
      data: { entry_id: entry, log: 'sel', severity: 'critical', message: 'Uncorrectable ECC | Asserted', sensor, created: iso(created) },
    });

  it('the same entry delivered again after its alert resolved does not page again; a new entry of the same sensor does', () => {
    const again = run(
      merge(gpus(200), [sel(T0 + 5 * MIN, '42', 'Memory #0x87'), sel(T0 + 150 * MIN, '42', 'Memory #0x87', T0 + 5 * MIN, 'sel-42-redelivered')]),
    );
    expect(firing(again.alerts, 'host-bmc-critical')).toHaveLength(1);
    expect(resolved(again.alerts, 'host-bmc-critical')).toHaveLength(1);
    const fresh = run(merge(gpus(200), [sel(T0 + 5 * MIN, '42', 'Memory #0x87'), sel(T0 + 150 * MIN, '43', 'Memory #0x87')]));
    expect(firing(fresh.alerts, 'host-bmc-critical')).toHaveLength(2);
  });

  it('an entry created 3 days before it arrives is history, not a page; one created a minute before is', () => {
    const old = run(merge(gpus(20), [sel(T0 + 10 * MIN, '42', 'Memory #0x87', T0 - 3 * 24 * 60 * MIN)]));
    expect(firing(old.alerts, 'host-bmc-critical')).toEqual([]);
    const recent = run(merge(gpus(20), [sel(T0 + 10 * MIN, '42', 'Memory #0x87', T0 + 9 * MIN)]));
    expect(firing(recent.alerts, 'host-bmc-critical')).toHaveLength(1);
  });

  it('5,000 distinct critical sensors on one host are 20 alerts and one with the count of the rest', () => {
    const storm: Envelope[] = [];
    for (let i = 0; i < 5_000; i += 1) storm.push(sel(T0 + 5 * MIN + i, `e${i}`, `Sensor #${i}`));
    const { alerts, state } = run(merge(gpus(10), storm));
    const fired = firing(alerts, 'host-bmc-critical');
    expect(fired).toHaveLength(21);
    expect(fired.at(-1)!.data.summary).toMatch(/^gpu-node-000 BMC: 1 more sensors past 20, the last Sensor #20/);
    expect(Object.keys(state.hosts[HOST]!.trackers).length).toBeLessThanOrEqual(30);
    expect(state.hosts[HOST]!.trackers[Object.keys(state.hosts[HOST]!.trackers).find((k) => k.endsWith('||more'))!]!.value).toBe(4_980);
  });
});

describe('the host layer: the training network', () => {
  const port = (device: string, over: Partial<IbPort> = {}): IbPort => ({
    device,
    port: 1,
    state: 'active',
    phys_state: 'link_up',
    rate_gbps: 400,
    link_layer: 'infiniband',
    counters: { symbol_error: 0, link_downed: 0 },
    ...over,
  });
  const ib = (at: (t: number) => IbPort[]) => bmcStream(30, (t) => ({ origin: 'sysfs', ib_ports: at(t) }));

  it('a port seen active goes down: fires; a port never up (an unused HCA) does not', () => {
    const down = (t: number) => t >= T0 + 10 * MIN && t < T0 + 20 * MIN;
    const { alerts } = run(
      ib((t) => [
        port('mlx5_0'),
        port('mlx5_1', down(t) ? { state: 'down', phys_state: 'polling', rate_gbps: null } : {}),
        port('mlx5_9', { state: 'down', phys_state: 'disabled', rate_gbps: null }),
      ]),
    );
    expect(firing(alerts).map((a) => [a.data.rule, a.data.summary])).toEqual([
      ['ib-port-down', 'gpu-node-000: InfiniBand port mlx5_1/1 is down (physical state polling)'],
    ]);
    expect(resolved(alerts, 'ib-port-down')).toHaveLength(1);
  });

  it("a port trained below its siblings' rate is degraded", () => {
    const { alerts } = run(ib((t) => [port('mlx5_0'), port('mlx5_1'), port('mlx5_2', { rate_gbps: t >= T0 + 10 * MIN ? 200 : 400 }), port('mlx5_3')]));
    expect(firing(alerts).map((a) => [a.data.rule, a.data.summary])).toEqual([
      ['ib-port-degraded', 'gpu-node-000: InfiniBand port mlx5_2/1 runs at 200 Gb/s, its siblings at 400 Gb/s'],
    ]);
  });

  it('error counters rising fire; steady (even high) counters and a counter reset do not; quiet resolves', () => {
    const rising = (t: number) => t >= T0 + 10 * MIN && t < T0 + 12 * MIN;
    let symbols = 1_000;
    const { alerts } = run(
      merge(
        gpus(40),
        ib((t) => {
          if (rising(t)) symbols += 37;
          const reset = t >= T0 + 30 * MIN;
          return [
            port('mlx5_0', { counters: { symbol_error: reset ? 0 : symbols, link_downed: 3 } }),
            port('mlx5_1', { counters: { symbol_error: 50_000, link_downed: 7 } }),
          ];
        }),
      ),
    );
    const fired = firing(alerts);
    expect(fired.map((a) => [a.data.rule, a.data.summary])).toEqual([
      ['ib-port-errors', 'gpu-node-000: InfiniBand port mlx5_0/1 error counters rising: symbol_error +37'],
    ]);
    expect(Date.parse(resolved(alerts, 'ib-port-errors')[0]!.ts)).toBeGreaterThanOrEqual(T0 + 12 * MIN + 15 * MIN - 30_000);
  });

  it('a 16-bit counter that saturates at 65535 while erroring keeps firing (errors go on unseen); one first seen there does not fire', () => {
    let symbols = 0;
    const { alerts } = run(
      ib((t) => {
        if (t > T0 + 2 * MIN) symbols = Math.min(65_535, symbols + 5_000);
        return [port('mlx5_0', { counters: { symbol_error: symbols } }), port('mlx5_1', { counters: { symbol_error: 65_535 } })];
      }),
      T0 + 44 * MIN,
    );
    expect(firing(alerts, 'ib-port-errors').map((a) => a.data.summary)).toEqual([
      'gpu-node-000: InfiniBand port mlx5_0/1 error counters rising: symbol_error +5000',
    ]);
    // Saturated by ~9 min and read there until 30 min: still open 14 min later (quiet is 15 min).
    expect(resolved(alerts, 'ib-port-errors')).toEqual([]);
  });

  it('healthy 200G storage HCAs beside 400G compute ones are not degraded; a compute port falling to 200G is', () => {
    const { alerts } = run(
      ib((t) => [
        ...Array.from({ length: 8 }, (_, i) => port(`mlx5_${i}`, { rate_gbps: i === 3 && t >= T0 + 10 * MIN ? 200 : 400 })),
        port('mlx5_8', { rate_gbps: 200 }),
        port('mlx5_9', { rate_gbps: 200 }),
      ]),
    );
    expect(firing(alerts).map((a) => [a.data.rule, a.data.summary])).toEqual([
      ['ib-port-degraded', 'gpu-node-000: InfiniBand port mlx5_3/1 runs at 200 Gb/s, its siblings at 400 Gb/s'],
    ]);
  });
});

describe("the host layer: the kernel's host faults and PCIe ports", () => {
  const line = (t: number, text: string): Envelope =>
    newEnvelope({ type: 'kernel.line', id: `l-${t}-${text.length}`, host: HOST, source: 'test', ts: iso(t), data: { line: text } });

  it('a host memory UE (real EDAC lines) is critical and stays until resolved: drain the host', () => {
    const log = readFileSync(new URL('../../../test/fixtures/kernel/host/console-memory-ue.log', import.meta.url), 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    const { alerts } = run(
      merge(
        gpus(120),
        log.map((text, i) => line(T0 + 5 * MIN + i, text)),
      ),
    );
    const ue = firing(alerts, 'host-memory-ue');
    expect(ue).toHaveLength(1);
    expect(ue[0]!.data).toMatchObject({ severity: 'critical', category: 'kernel' });
    expect(ue[0]!.data.action).toMatch(/[Dd]rain/);
    expect(resolved(alerts, 'host-memory-ue')).toEqual([]);
  });

  it('a hung task (real lines) is an error, resolved after an hour without another', () => {
    const log = readFileSync(new URL('../../../test/fixtures/kernel/wild/12-persistenced-15-hung-task-nvidia.log', import.meta.url), 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    const { alerts } = run(
      merge(
        gpus(100),
        log.map((text, i) => line(T0 + 5 * MIN + i, text)),
      ),
    );
    const hung = firing(alerts, 'host-kernel-fault');
    expect(hung).toHaveLength(1);
    expect(hung[0]!.data.severity).toBe('error');
    expect(resolved(alerts, 'host-kernel-fault')).toHaveLength(1);
    // Taken by the host rule, not also by kernel-event.
    expect(firing(alerts, 'kernel-event')).toEqual([]);
  });

  it("a root port's fatal AER error names the GPUs below it, from the tree in the host's inventory", () => {
    // The AER line is real (test/fixtures/kernel/dmesg-pcie-aer.log); the tree is synthetic, in lspci -tvnn's format.
    const aer = '[256236.152634] pcieport 0000:89:02.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)';
    const tree = fromLspciTree(
      [
        '-+-[0000:89]-+-02.0-[8a-8e]----00.0-[8b-8e]--+-00.0-[8c]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]',
        ` |           |${' '.repeat(31)}\\-01.0-[8d]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]`,
        ' |           \\-03.0-[8f]----00.0  Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]',
        ' \\-[0000:00]-+-00.0  Intel Corporation Device [8086:09a2]',
      ].join('\n'),
    );
    if (!tree.ok) throw new Error(tree.error);
    const envelopes = gpus(20);
    const inventory = envelopes.find((e): e is EnvelopeOf<'host.inventory'> => e.type === 'host.inventory')!;
    inventory.data.gpus = inventory.data.gpus.map((g, i) => ({ ...g, pci_bus: ['0000:8c:00', '0000:8d:00', '0000:9c:00', '0000:9d:00'][i]! }));
    const without = run(merge(envelopes, [line(T0 + 5 * MIN, aer)]));
    // Without the tree the port's error is the generic kernel-event's, naming no GPU.
    expect(firing(without.alerts, 'pcie-port-fatal')[0]?.data.summary ?? '').not.toMatch(/GPU 0, 1/);
    inventory.data.pci_topology = tree.value.data;
    const { alerts, state } = run(merge(envelopes, [line(T0 + 5 * MIN, aer)]));
    const port = firing(alerts, 'pcie-port-fatal');
    expect(port.map((a) => [a.data.severity, a.data.summary])).toEqual([
      ['critical', expect.stringMatching(/^gpu-node-000: PCIe port 0000:89:02\.0: .*; below it: GPU 0, 1$/)],
    ]);
    // The state keeps only the paths to the GPUs (not the NIC), and a restarted engine still has them.
    expect(state.hosts[HOST]!.pci!.map((d) => d.address).sort()).toEqual([
      '0000:89:02.0',
      '0000:8a:00.0',
      '0000:8b:00.0',
      '0000:8b:01.0',
      '0000:8c:00.0',
      '0000:8d:00.0',
    ]);
    expect(parseHostState(JSON.stringify(state.hosts[HOST]))!.pci).toEqual(state.hosts[HOST]!.pci);
  });
});

describe('the host layer: state', () => {
  it('what the rules remember (the inlet normal, each port) survives save and load, its maps inert', () => {
    const { state } = run(
      merge(
        bmcStream(15, () => ({ temperatures: [{ name: 'Inlet', celsius: 23, location: 'inlet', health: 'ok' }] })),
        [
          hostSample(T0 + 16 * MIN, {
            origin: 'sysfs',
            ib_ports: [
              { device: '__proto__', port: 1, state: 'active', phys_state: 'link_up', rate_gbps: 400, link_layer: 'infiniband', counters: { symbol_error: 4 } },
            ],
          }),
          hostSample(T0 + 17 * MIN, { fans: [{ name: '__proto__', rpm: 0, health: 'critical' }] }),
        ],
      ),
    );
    const host = state.hosts[HOST]!;
    expect(host.hostLayer!.inlet!.n).toBe(30);
    const loaded = parseHostState(JSON.stringify(host))!;
    expect(loaded.hostLayer).toEqual(host.hostLayer);
    expect(isInert(loaded.hostLayer!.ib!)).toBe(true);
    expect(isInert(loaded.hostLayer!.ib!['__proto__/1']!.counters)).toBe(true);
    expect(loaded.hostLayer!.ib!['__proto__/1']).toEqual({ active: true, counters: { symbol_error: 4 }, best_rate: 400 });
    expect(isInert(loaded.hostLayer!.failedFans!)).toBe(true);
    expect(loaded.hostLayer!.failedFans!['__proto__']).toBe(T0 + 17 * MIN);
  });
});

describe('the host layer: restarts', () => {
  it('the cooling recording judged with a restart (save, load, a new engine) after every envelope gives the same alerts as without', () => {
    const straight = replay(new Engine(rules.value, catalog.value), COOLING);
    expect(straight.some((a) => a.data.root_cause === 'cooling' && a.data.incident !== undefined)).toBe(true);
    let state: EngineState = emptyEngineState();
    const alerts: EnvelopeOf<'alert'>[] = [];
    let last = -Infinity;
    let clock = new StreamClock(new Engine(rules.value, catalog.value));
    for (const line of COOLING) {
      const envelope = JSON.parse(line) as Envelope;
      last = Math.max(last, Date.parse(envelope.ts));
      alerts.push(...clock.judge(state, envelope));
      const hosts = Object.fromEntries(Object.entries(state.hosts).map(([name, host]) => [name, JSON.stringify(host)]));
      state = { hosts: emptyEngineState().hosts, fleet: parseFleetState(JSON.stringify(state.fleet)) };
      for (const [name, json] of Object.entries(hosts)) state.hosts[name] = parseHostState(json)!;
      clock = new StreamClock(new Engine(rules.value, catalog.value), 'event', undefined, clock.now);
    }
    alerts.push(...clock.tick(state, last));
    expect(alerts.map((a) => a.id)).toEqual(straight.map((a) => a.id));
    expect(alerts.map((a) => [a.data.incident, a.data.root_cause])).toEqual(straight.map((a) => [a.data.incident, a.data.root_cause]));
  });
});

describe('the host layer: rules check', () => {
  it('a misspelt host fault or port check is refused on its line with the nearest valid value', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-host-rules-'));
    cpSync(DEFAULT_RULES_DIR, dir, { recursive: true });
    const file = join(dir, 'defaults.yaml');
    const text = readFileSync(file, 'utf8');
    const edited = text.replace('faults: [memory_ue]', 'faults: [memory_eu]').replace('check: degraded', 'check: degarded');
    expect(edited).not.toBe(text);
    writeFileSync(file, edited);
    const loaded = loadRuleSet(dir);
    const lines = edited.split('\n');
    const lineOf = (s: string) => lines.findIndex((l) => l.includes(s)) + 1;
    expect(loaded.ok ? [] : loaded.errors.map((e) => formatRuleError(e).slice(dir.length + 1)).sort()).toEqual([
      expect.stringMatching(
        new RegExp(`^defaults\\.yaml:${lineOf('check: degarded')}: rules\\.\\d+\\.check: "degarded" is not one of .*; did you mean "degraded"\\?$`),
      ),
      expect.stringMatching(
        new RegExp(`^defaults\\.yaml:${lineOf('faults: [memory_eu]')}: rules\\.\\d+\\.faults\\.0: "memory_eu" is not one of .*; did you mean "memory_ue"\\?$`),
      ),
    ]);
  });
});
