import { readFileSync } from 'node:fs';
import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, type Envelope, type EnvelopeOf, type GpuMetrics } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { emptyEngineState, type EngineState } from './engine-state.ts';
import { loadRuleSet } from './load-rules.ts';
import { replay } from './replay.ts';
import { StreamClock } from './time-policy.ts';
import { hostName, syntheticFleet, type FleetOptions } from '@gpualert/test-support';

const rules = loadRuleSet();
if (!rules.ok) throw new Error(rules.errors.map(formatRuleError).join('\n'));
const catalog = loadXidCatalog();
if (!catalog.ok) throw new Error('catalog');
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;

/** Runs envelopes through a fresh engine by the engine's one time policy (as replay and the service do), then lets time pass until `until`. */
function run(envelopes: Iterable<Envelope>, until?: number): { alerts: EnvelopeOf<'alert'>[]; state: EngineState; engine: Engine } {
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
  return { alerts, state, engine };
}

function fleet(options: Partial<FleetOptions> = {}) {
  return [...syntheticFleet({ hosts: 4, gpusPerHost: 8, start: T0, minutes: 60, seed: 7, ...options })];
}

/** A fleet where every host is busy the whole time (so load-only faults show). */
const busy = (gpu: GpuMetrics): GpuMetrics => ({
  ...gpu,
  util_pct: 97,
  processes: 1,
  pcie_gen: 5,
  temp_c: 60 + (gpu.index % 3),
  power_w: 630,
  throttle: ['sw_power_cap'],
});

const firing = (alerts: EnvelopeOf<'alert'>[], min: 'warning' | 'error' | 'critical' = 'warning') =>
  alerts.filter(
    (a) =>
      a.data.status === 'firing' && ['info', 'warning', 'error', 'critical'].indexOf(a.data.severity) >= ['info', 'warning', 'error', 'critical'].indexOf(min),
  );

function kernelEvent(host: string, at: number, data: EnvelopeOf<'kernel.event'>['data']): Envelope {
  return newEnvelope({ type: 'kernel.event', id: `k-${host}-${at}`, host, source: 'test', ts: new Date(at).toISOString(), data });
}

function merge(...streams: Envelope[][]): Envelope[] {
  return streams.flat().sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
}

describe('scenarios', () => {
  it('a healthy fleet stays silent for hours: jobs start and stop, offsets of a few degrees, SW power cap, PCIe downtrained at idle', () => {
    const { alerts, state } = run(syntheticFleet({ hosts: 8, gpusPerHost: 8, start: T0, minutes: 6 * 60, seed: 3 }));
    expect(firing(alerts)).toEqual([]);
    // and it learned: each GPU has its own normal for idle and busy temperature
    expect(Object.keys(state.hosts[hostName(0)]!.gpus[0]!.baselines).sort()).toEqual(['power_w:busy', 'power_w:idle', 'temp_c:busy', 'temp_c:idle']);
  });

  it('catches a GPU drifting 12–16 °C above its siblings within minutes, under every fixed threshold', () => {
    const onset = T0 + 30 * MIN;
    const { alerts } = run(
      fleet({
        fault: (h, gpu, at) => {
          const g = busy(gpu);
          if (h !== 1 || gpu.index !== 5 || at < onset) return g;
          const drift = Math.min(16, 12 + ((at - onset) / MIN) * 0.2);
          return { ...g, temp_c: (g.temp_c ?? 60) + drift };
        },
      }),
    );
    const hot = firing(alerts);
    expect(hot.length).toBeGreaterThan(0);
    expect(hot.every((a) => a.host === hostName(1) && a.data.gpu?.index === 5)).toBe(true);
    const first = hot[0]!;
    expect(first.data.rule).toBe('gpu-temp-peer');
    expect(Date.parse(first.ts) - onset).toBeLessThanOrEqual(5 * MIN);
    expect(hot.some((a) => a.data.rule === 'gpu-temp-high')).toBe(false);
    expect(first.data.templates).toEqual(['h100']);
    expect(first.data.summary).toMatch(/GPU 5 on gpu-node-001 runs 1\d(\.\d)? °C hotter than its siblings/);
  });

  it('an Xid 79 then the GPU vanishing is one critical alert for that GPU, until a reboot brings it back', () => {
    const lostAt = T0 + 20 * MIN;
    const rebootAt = T0 + 40 * MIN;
    const samples = fleet({ fault: (h, gpu, at) => (h === 2 && gpu.index === 3 && at >= lostAt && at < rebootAt ? null : busy(gpu)) });
    const xid = kernelEvent(hostName(2), lostAt - 1_000, {
      kind: 'xid',
      xid: 79,
      pci_bus: '0000:4b:00',
      severity: 'critical',
      message: "NVRM: Xid (PCI:0000:4b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
      meaning: 'GPU has fallen off the bus',
      count: 1,
    });
    const reboot = newEnvelope({ ...samples[2]!, id: 'inventory-after-reboot', ts: new Date(rebootAt - 5_000).toISOString() } as EnvelopeOf<'host.inventory'>);
    const { alerts } = run(merge(samples, [xid, reboot]));
    const lost = alerts.filter((a) => a.host === hostName(2));
    expect(lost.map((a) => [a.data.status, a.data.severity, a.data.category, a.data.gpu?.index])).toEqual([
      ['firing', 'critical', 'fallen_off_bus', 3],
      ['resolved', 'critical', 'fallen_off_bus', 3],
    ]);
    expect(lost[0]!.data.evidence).toContain(xid.id);
    expect(Date.parse(lost[1]!.ts)).toBeGreaterThanOrEqual(rebootAt);
    expect(firing(alerts).filter((a) => a.host !== hostName(2))).toEqual([]);
  });

  it("a maintenance window is announced as an alert and keeps the host's absence off the pager", () => {
    const start = T0 + 20 * MIN;
    const end = T0 + 35 * MIN;
    const samples = fleet({ fault: (h, gpu, at) => busy(gpu) }).filter(
      (e) => !(e.host === hostName(0) && e.type === 'gpu.sample' && Date.parse(e.ts) >= start + 60_000 && Date.parse(e.ts) < end),
    );
    const notice = (status: 'scheduled' | 'completed', at: number): Envelope =>
      newEnvelope({
        type: 'provider.event',
        id: `p-${status}`,
        host: hostName(0),
        source: 'test',
        ts: new Date(at).toISOString(),
        data: {
          provider: 'gcp',
          event_id: 'm-1',
          kind: 'maintenance',
          status,
          hosts: [hostName(0)],
          window_start: new Date(start).toISOString(),
          window_end: new Date(end).toISOString(),
          description: 'host maintenance',
          raw_id: 'm-1',
        },
      });
    const { alerts } = run(merge(samples, [notice('scheduled', T0 + 5 * MIN), notice('completed', end + 2 * MIN)]));
    const mine = alerts.filter((a) => a.host === hostName(0));
    expect(mine.map((a) => [a.data.category, a.data.status, a.data.expected ?? false])).toEqual([
      ['maintenance', 'firing', false],
      ['host_down', 'firing', true],
      ['host_down', 'firing', true], // escalated after 10 minutes, still expected
      ['host_down', 'resolved', true],
      ['maintenance', 'resolved', false],
    ]);
    expect(mine[0]!.ts).toBe(new Date(T0 + 5 * MIN).toISOString()); // announced as soon as it is announced
    // It carries the window the provider announced: the notifier's silence holds the pager for that, not from the notice.
    expect(mine[0]!.data.window).toEqual({ start: new Date(start).toISOString(), end: new Date(end).toISOString() });
    expect(mine[4]!.data.summary).toMatch(/maintenance completed/);
  });

  it('a window the provider moves is said again with its new times; the same notice again says nothing', () => {
    const notice = (id: string, at: number, start: number): Envelope =>
      newEnvelope({
        type: 'provider.event',
        id,
        host: hostName(0),
        source: 'test',
        ts: new Date(at).toISOString(),
        data: {
          provider: 'aws',
          event_id: 'm-2',
          kind: 'maintenance',
          status: 'scheduled',
          hosts: [hostName(0)],
          window_start: new Date(start).toISOString(),
          window_end: new Date(start + 60 * MIN).toISOString(),
          description: 'system-maintenance',
          raw_id: 'm-2',
        },
      });
    const samples = fleet({ fault: (h, gpu) => busy(gpu) });
    const { alerts } = run(
      merge(samples, [notice('n1', T0 + 2 * MIN, T0 + 60 * MIN), notice('n2', T0 + 4 * MIN, T0 + 60 * MIN), notice('n3', T0 + 6 * MIN, T0 + 90 * MIN)]),
    );
    const mine = alerts.filter((a) => a.host === hostName(0) && a.data.category === 'maintenance');
    expect(mine.map((a) => [a.ts, a.data.status, a.data.window?.start])).toEqual([
      [new Date(T0 + 2 * MIN).toISOString(), 'firing', new Date(T0 + 60 * MIN).toISOString()],
      [new Date(T0 + 6 * MIN).toISOString(), 'firing', new Date(T0 + 90 * MIN).toISOString()],
    ]);
  });

  it('catches a stuck job, an ECC double-bit error with row remap pending, and a PCIe link at x8 under load', () => {
    const at = T0 + 10 * MIN;
    const { alerts } = run(
      fleet({
        fault: (h, gpu, t) => {
          const g = busy(gpu);
          if (h === 0 && gpu.index === 1 && t >= at) return { ...g, util_pct: 0, temp_c: 36, power_w: 80, throttle: ['gpu_idle'] }; // process alive, work stopped
          if (h === 1 && gpu.index === 2 && t >= at) return { ...g, ecc_dbe_volatile: 2, remap_pending: true };
          if (h === 2 && gpu.index === 6) return { ...g, pcie_width: 8 };
          return g;
        },
      }),
    );
    const by = (host: number) =>
      firing(alerts)
        .filter((a) => a.host === hostName(host))
        .map((a) => [a.data.rule, a.data.severity, a.data.gpu?.index]);
    expect(by(0)).toEqual([['stuck-job', 'warning', 1]]);
    expect(by(1)).toEqual([
      ['ecc-dbe', 'critical', 2],
      ['row-remap-pending', 'warning', 2],
    ]);
    expect(by(2)).toEqual([['pcie-downtrained', 'warning', 6]]);
    expect(firing(alerts).find((a) => a.data.rule === 'pcie-downtrained')!.data.summary).toMatch(/Gen5 x8 of Gen5 x16/);
    // the two faults of host 1 arrive within seconds: one incident
    const host1 = firing(alerts).filter((a) => a.host === hostName(1));
    expect(host1[1]!.data.incident).toBe(host1[0]!.data.fingerprint);
  });

  it('catches a host on an older driver than its cluster', () => {
    const { alerts } = run(fleet({ minutes: 1, inventory: (h, inv) => (h === 3 ? { ...inv, driver_version: '535.104.05' } : inv) }));
    expect(firing(alerts).map((a) => [a.host, a.data.rule, a.data.summary])).toEqual([
      [hostName(3), 'version-drift', `${hostName(3)} runs driver 535.104.05 while 3 of 4 hosts in lab run 550.54.15`],
    ]);
  });

  it('a host relabelled into another cluster no longer counts in the old one: the drift it propped up resolves', () => {
    const envelopes = fleet({ minutes: 1, inventory: (h, inv) => (h === 3 ? { ...inv, driver_version: '535.104.05' } : inv) });
    const inventories = envelopes.filter((e): e is EnvelopeOf<'host.inventory'> => e.type === 'host.inventory');
    const last = Math.max(...envelopes.map((e) => Date.parse(e.ts)));
    // Hosts 0 and 1 move to cluster lab-b: lab keeps host 2 (550) and host 3 (535), no majority either way.
    const moved = inventories
      .filter((e) => e.host === hostName(0) || e.host === hostName(1))
      .map((e) => newEnvelope({ ...e, id: `moved-${e.host}`, ts: new Date(last + 1_000).toISOString(), labels: { ...e.labels, cluster: 'lab-b' } }));
    const engine = new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
    const state = emptyEngineState();
    const clock = new StreamClock(engine);
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (const envelope of [...envelopes, ...moved]) {
      alerts.push(...clock.judge(state, envelope));
      if (envelope.type === 'host.inventory') alerts.push(...engine.rejudgeClusters(state, engine.takeChangedClusters()));
    }
    const drift = alerts.filter((a) => a.data.rule === 'version-drift').map((a) => [a.host, a.data.status]);
    expect(drift).toEqual([
      [hostName(3), 'firing'],
      [hostName(3), 'resolved'],
    ]);
    expect(Object.keys(state.fleet.clusters.lab!).sort()).toEqual([hostName(2), hostName(3)]);
    expect(Object.keys(state.fleet.clusters['lab-b']!).sort()).toEqual([hostName(0), hostName(1)]);
  });

  it('escalates repeated application Xids on one GPU and resolves them after a quiet period', () => {
    const host = hostName(0);
    const xid13 = (i: number) =>
      kernelEvent(host, T0 + i * 2 * MIN, {
        kind: 'xid',
        xid: 13,
        pci_bus: '0000:18:00',
        severity: 'warning',
        message: 'NVRM: Xid 13',
        meaning: 'Graphics Engine Exception',
        count: 3,
      });
    const { alerts } = run(merge(fleet({ fault: (h, g) => busy(g) }), [xid13(1), xid13(2), xid13(3)]), T0 + 60 * MIN);
    expect(alerts.filter((a) => a.data.rule === 'kernel-event').map((a) => [a.data.status, a.data.severity])).toEqual([
      ['firing', 'warning'],
      ['firing', 'error'],
      ['resolved', 'error'],
    ]);
    expect(alerts.find((a) => a.data.severity === 'error')!.data.summary).toMatch(/3 times on this GPU within 10 min: suspect the hardware/);
  });

  it('turns a flapping alert into one flapping message', () => {
    const { alerts } = run(
      fleet({
        minutes: 40,
        fault: (h, gpu, at) =>
          h === 0 && gpu.index === 0 && Math.floor((at - T0) / (2 * MIN)) % 2 === 1 ? { ...busy(gpu), throttle: ['hw_slowdown'] } : busy(gpu),
      }),
    );
    const mine = alerts.filter((a) => a.host === hostName(0));
    expect(mine.filter((a) => a.data.rule === 'flapping').map((a) => a.data.status)).toEqual(['firing']);
    expect(mine.filter((a) => a.data.rule === 'hw-slowdown').length).toBeLessThanOrEqual(5);
  });

  it('lets an operator resolve a latched hardware alert', () => {
    const { alerts, state, engine } = run(
      fleet({ minutes: 5, fault: (h, g, t) => (h === 0 && g.index === 0 && t > T0 + MIN ? { ...busy(g), remap_failure: true } : busy(g)) }),
    );
    const latched = firing(alerts).find((a) => a.data.rule === 'row-remap-failure')!;
    const resolved = engine.resolveByOperator(state, latched.data.fingerprint, T0 + 6 * MIN);
    expect(resolved.map((a) => [a.data.fingerprint, a.data.status])).toEqual([[latched.data.fingerprint, 'resolved']]);
  });
});

describe('the other rule kinds', () => {
  it('baseline: a GPU far from its own normal at the same load, though its siblings run cool too', () => {
    // Every GPU of host 0 idles at its usual 34 °C; after 40 minutes GPU 4 idles at 52 °C.
    const { alerts } = run(
      fleet({
        minutes: 80,
        fault: (h, gpu, at) => {
          const idle = {
            ...gpu,
            util_pct: 0,
            processes: 0,
            temp_c: 34 + (gpu.index % 2),
            power_w: 72,
            throttle: ['gpu_idle'] as GpuMetrics['throttle'],
            pcie_gen: 1,
          };
          return h === 0 && gpu.index === 4 && at > T0 + 40 * MIN ? { ...idle, temp_c: 52 } : idle;
        },
      }),
    );
    const baseline = firing(alerts).filter((a) => a.data.rule === 'gpu-temp-baseline');
    expect(baseline.map((a) => [a.host, a.data.gpu?.index])).toEqual([[hostName(0), 4]]);
    expect(baseline[0]!.data.summary).toMatch(/runs at 52 °C, 1\d(\.\d)? °C above its own normal of 3\d(\.\d)? °C/);
  });

  it('idle cost: a paid host with idle GPUs and no process for four hours', () => {
    const { alerts } = run(fleet({ hosts: 1, minutes: 5 * 60, fault: (h, gpu) => ({ ...gpu, util_pct: 0, processes: 0, temp_c: 34, power_w: 72 }) }));
    expect(firing(alerts).map((a) => [a.data.rule, Date.parse(a.ts) - T0])).toEqual([['idle-cost', 4 * 3_600_000]]);
  });

  it('collector: nvidia-smi failing twice in a row, and the lost-GPU message naming a bus', () => {
    const samples = fleet({ hosts: 1, minutes: 3, fault: (h, g) => busy(g) });
    const failing = samples.map((e, i) =>
      e.type === 'gpu.sample' && i > 6 && i < 10
        ? { ...e, data: { gpus: [], error: { code: 'timeout' as const, message: 'nvidia-smi did not answer in time' } } }
        : e,
    );
    const { alerts } = run(failing as Envelope[]);
    expect(alerts.filter((a) => a.data.rule === 'collector-failing').map((a) => [a.data.status, a.data.severity])).toEqual([
      ['firing', 'error'],
      ['resolved', 'error'],
    ]);
    const lost = samples.map((e, i) =>
      e.type === 'gpu.sample' && i > 6
        ? {
            ...e,
            data: {
              gpus: e.data.gpus.filter((g) => g.index !== 1),
              error: { code: 'gpu_lost' as const, message: 'Unable to determine the device handle for GPU0000:29:00.0: Unknown Error', pci_bus: '0000:29:00' },
            },
          }
        : e,
    );
    const gone = firing(run(lost as Envelope[]).alerts);
    expect(gone.map((a) => [a.data.rule, a.data.severity, a.data.gpu?.index])).toEqual([['gpu-absent', 'critical', 1]]);
  });

  it('straggler: one host of a job running far slower than the rest', () => {
    const { alerts } = run(fleet({ minutes: 30, fault: (h, gpu, at) => (h === 2 && at > T0 + 5 * MIN ? { ...busy(gpu), util_pct: 40 } : busy(gpu)) }));
    expect(firing(alerts).map((a) => [a.host, a.data.rule])).toEqual([[hostName(2), 'job-straggler']]);
  });
});

describe('replay', () => {
  const lines = readFileSync(new URL('../../../test/fixtures/recordings/example-thermal-xid13-gcp.jsonl', import.meta.url), 'utf8').split('\n');

  it('gives identical output twice', () => {
    const engine = () => new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
    const first = replay(engine(), lines);
    expect(first.length).toBeGreaterThan(0);
    expect(JSON.stringify(replay(engine(), lines))).toBe(JSON.stringify(first));
  });

  it('tells the example incident: maintenance notice, the Xid 13 burst, the GPU driven into HW thermal slowdown', () => {
    const engine = new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
    const alerts = replay(engine, lines);
    expect(alerts.map((a) => [a.data.rule, a.data.severity, a.data.gpu?.index ?? null])).toEqual([
      ['provider-maintenance', 'warning', null],
      ['kernel-event', 'warning', 2],
      ['hw-slowdown', 'error', 1],
      ['gpu-temp-peer', 'warning', 1],
      ['gpu-temp-baseline', 'warning', 1],
      ['gpu-temp-high', 'error', 1],
    ]);
  });
});
