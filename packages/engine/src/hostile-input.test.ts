import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { isInert, MAX_GPUS_PER_SAMPLE, newEnvelope, parseEnvelope, type Envelope, type EnvelopeOf, type GpuMetrics } from '@gpualert/schema';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Engine, MAX_MAINTENANCE_WINDOWS_PER_HOST, MAX_XID_CODES_PER_GPU } from './engine.ts';
import { emptyEngineState, parseFleetState, parseHostState, type EngineState } from './engine-state.ts';
import { hostileEnvelope, PROTOTYPE_KEYS, SENTINEL_HOST } from '@gpualert/test-support';
import { loadRuleSet } from './load-rules.ts';
import { peerMedian, peerMedians } from './peer-medians.ts';
import { RecordingError, replay } from './replay.ts';

const rules = loadRuleSet();
if (!rules.ok) throw new Error(rules.errors.map(formatRuleError).join('\n'));
const catalog = loadXidCatalog();
if (!catalog.ok) throw new Error('catalog');
const engine = () => new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
const T0 = Date.parse('2026-06-01T00:00:00Z');
/** Cases per property in CI; GPUALERT_FUZZ_RUNS asks for more (run once by hand: see the issue note). */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 300);

function gpu(index: number, over: Partial<GpuMetrics> = {}): GpuMetrics {
  return {
    index,
    uuid: null,
    pci_bus: null,
    name: 'NVIDIA H100',
    util_pct: 97,
    mem_util_pct: 40,
    mem_used_mib: 60_000,
    mem_total_mib: 81_559,
    temp_c: 60 + (index % 5),
    mem_temp_c: 66,
    power_w: 640,
    power_limit_w: 700,
    sm_clock_mhz: 1980,
    mem_clock_mhz: 2619,
    fan_pct: null,
    pcie_gen: 5,
    pcie_gen_max: 5,
    pcie_width: 16,
    pcie_width_max: 16,
    ecc_sbe_volatile: 0,
    ecc_dbe_volatile: 0,
    ecc_sbe_aggregate: 0,
    ecc_dbe_aggregate: 0,
    remap_pending: false,
    remap_failure: false,
    throttle: [],
    xid_last: null,
    nvlink_errors: 0,
    processes: 1,
    ...over,
  };
}

const sample = (host: string, at: number, gpus: GpuMetrics[], labels: Record<string, string> = {}): Envelope =>
  newEnvelope({ type: 'gpu.sample', id: `s-${host}-${at}`, host, source: 'test', ts: new Date(at).toISOString(), labels, data: { gpus } });

/** An Xid 79 on a host with no inventory: the GPU fell off the bus, a critical page. */
const xid79 = (host: string, at: number): Envelope =>
  newEnvelope({
    type: 'kernel.event',
    id: `x-${host}-${at}`,
    host,
    source: 'test',
    ts: new Date(at).toISOString(),
    data: { kind: 'xid', xid: 79, pci_bus: '0000:3b:00', message: 'NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.', severity: 'critical' },
  });

const pagedFor = (alerts: EnvelopeOf<'alert'>[], host: string) =>
  alerts.filter((a) => a.host === host && a.data.status === 'firing' && a.data.severity === 'critical');

/** What a polluted Object.prototype would show: any key a plain object inherits that it should not. */
const prototypeNames = () => Object.getOwnPropertyNames(Object.prototype).sort().join(',');
const PRISTINE = prototypeNames();
function prototypeUntouched(): boolean {
  const plain: Record<string, unknown> = {};
  for (const key in plain) return false; // an enumerable key written onto Object.prototype
  return prototypeNames() === PRISTINE && Object.getPrototypeOf(plain) === Object.prototype;
}

describe('hosts named like members of every object', () => {
  it.each(PROTOTYPE_KEYS)('a host named %s is judged like any other: its samples, its Xid 79, the clock', (name) => {
    const e = engine();
    const state = emptyEngineState();
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (let i = 0; i < 6; i += 1) alerts.push(...e.advance(state, sample(name, T0 + i * 10_000, [gpu(0), gpu(1)])));
    alerts.push(...e.advance(state, xid79(name, T0 + 61_000)));
    alerts.push(...e.tick(state, T0 + 120_000));
    expect(pagedFor(alerts, name).map((a) => a.data.rule)).toContain('gpu-absent');
    expect(Object.keys(state.hosts)).toEqual([name]);
    expect(prototypeUntouched()).toBe(true);
  });

  it('`replay` of a recording with such hosts prints their alerts (it exited 1 with no line)', () => {
    const lines = PROTOTYPE_KEYS.flatMap((name) => [sample(name, T0, [gpu(0)]), xid79(name, T0 + 1_000)]).map((e) => JSON.stringify(e));
    const alerts = replay(engine(), lines);
    expect(new Set(alerts.filter((a) => a.data.severity === 'critical').map((a) => a.host))).toEqual(new Set(PROTOTYPE_KEYS));
  });
});

describe('label values named like members of every object', () => {
  it('a job or cluster called __proto__ writes nothing onto Object.prototype, and an Xid 79 on a host without inventory still pages', () => {
    const e = engine();
    const state = emptyEngineState();
    // Parsed as the service and replay parse them: the label values come from outside.
    const hostile = ['__proto__', 'constructor', 'toString'].flatMap((value, i) => [
      parseEnvelope(JSON.stringify(sample(`gpu-node-${i}`, T0 + i, [gpu(0)], { job: value, cluster: value }))),
      parseEnvelope(
        JSON.stringify(
          newEnvelope({
            type: 'host.inventory',
            host: `gpu-node-${i}`,
            source: 'test',
            ts: new Date(T0 + 5 + i).toISOString(),
            labels: { job: value, cluster: value },
            data: {
              gpu_model: 'NVIDIA H100',
              gpu_count: 1,
              driver_version: '550.54.15',
              cuda_version: '12.4',
              gpus: [{ index: 0, uuid: 'GPU-1', pci_bus: '0000:18:00', name: 'H100' }],
            },
          }),
        ),
      ),
    ]);
    for (const parsed of hostile) {
      if (!parsed.ok) throw new Error(parsed.error.message);
      e.advance(state, parsed.value);
      e.advance(state, { ...parsed.value, ts: new Date(Date.parse(parsed.value.ts) + 20_000).toISOString() } as Envelope);
    }
    expect(prototypeUntouched()).toBe(true);
    expect(Object.keys(state.fleet.jobs).sort()).toEqual(['__proto__', 'constructor', 'toString']);
    const alerts = e.advance(state, xid79('gpu-node-clean', T0 + 60_000));
    expect(pagedFor(alerts, 'gpu-node-clean')).toHaveLength(1);
  });
});

describe('persisted state', () => {
  it('reads back a host named __proto__ with inert maps, and judging goes on from it', () => {
    const e = engine();
    const state = emptyEngineState();
    e.advance(state, sample('__proto__', T0, [gpu(0, { pci_bus: '0000:3b:00' })], { job: '__proto__' }));
    const saved = JSON.stringify(state.hosts.__proto__);
    const restored: EngineState = { hosts: emptyEngineState().hosts, fleet: parseFleetState(JSON.stringify(state.fleet)) };
    restored.hosts.__proto__ = parseHostState(saved)!;
    expect(isInert(restored.hosts.__proto__!.gpus)).toBe(true);
    expect(isInert(restored.fleet.jobs)).toBe(true);
    expect(isInert(restored.hosts)).toBe(true);
    expect(Object.keys(restored.fleet.jobs)).toEqual(['__proto__']);
    const alerts = e.advance(restored, xid79('__proto__', T0 + 30_000));
    expect(pagedFor(alerts, '__proto__')).toHaveLength(1);
  });

  it('state written by an older engine with prototype keys in it parses into data, never into a prototype', () => {
    const fleet = parseFleetState(
      '{"jobs":{"__proto__":{"constructor":{"util":90,"at":1}},"toString":{}},"clusters":{"constructor":{"__proto__":{"driver":"550","cuda":"12.4"}}}}',
    );
    expect(Object.keys(fleet.jobs).sort()).toEqual(['__proto__', 'toString']);
    const key = (name: string) => name; // a key as data, not as the member TypeScript knows
    expect(fleet.jobs.__proto__![key('constructor')]).toEqual({ util: 90, at: 1 });
    expect(fleet.clusters[key('constructor')]![key('__proto__')]).toEqual({ driver: '550', cuda: '12.4' });
    expect(fleet.jobs.hasOwnProperty).toBeUndefined();
    const host = parseHostState(
      '{"host":"h","labels":{"__proto__":"x"},"template":"default","intervalMs":10000,"collectorErrors":0,"gpus":{"__proto__":{"lastSeen":0,"missing":0,"baselines":{},"counters":{},"recent":[],"xids":{"__proto__":[1]}}},"trackers":{"constructor":{}},"maintenance":{"__proto__":{"status":"scheduled","description":""}},"now":0,"lastTick":0,"offsets":{}}',
    )!;
    expect(host.labels.__proto__).toBe('x');
    expect(Object.keys(host.maintenance)).toEqual(['__proto__']);
    expect(host.trackers.toString).toBeUndefined();
    expect(prototypeUntouched()).toBe(true);
  });
});

describe('judging time is linear in GPUs per sample', () => {
  // Timing here only guards the complexity class, with a margin of 25x over the linear code (0.4 s
  // here) and far under the quadratic one (44.9 s): noise cannot fail it, a quadratic loop would.
  it('a sample of 5,000 GPUs, half of them hot against their peers, judges in seconds, not the 44.9 s it took', () => {
    const e = engine();
    const state = emptyEngineState();
    let worst = 0;
    for (let i = 0; i < 4; i += 1) {
      const gpus = Array.from({ length: 5_000 }, (_, g) =>
        gpu(g, { temp_c: g % 2 === 0 ? 95 : 60 + (g % 5), util_pct: 90 + (g % 10), pci_bus: `0000:${(g % 256).toString(16).padStart(2, '0')}:00` }),
      );
      const started = performance.now();
      e.advance(state, sample('big-host', T0 + i * 10_000, gpus));
      worst = Math.max(worst, performance.now() - started);
    }
    expect(worst).toBeLessThan(10_000);
  });

  it('the sliding peer median is each GPU compared with each other GPU, for any sample', () => {
    const gpuArb = fc.record({
      util: fc.option(fc.integer({ min: 0, max: 100 }), { nil: null }),
      temp: fc.option(fc.integer({ min: 20, max: 100 }), { nil: null }),
    });
    fc.assert(
      fc.property(fc.array(gpuArb, { minLength: 33, maxLength: 120 }), fc.integer({ min: 0, max: 40 }), (specs, band) => {
        const gpus = specs.map((s, i) => gpu(i, { util_pct: s.util, temp_c: s.temp }));
        const fast = peerMedians(gpus, 'temp_c', band);
        return gpus.every((g, i) => Object.is(fast[i], peerMedian(gpus, g, 'temp_c', band)));
      }),
      { numRuns: RUNS },
    );
  });

  it(`a sample at the bound (${MAX_GPUS_PER_SAMPLE} GPUs) judges in milliseconds (21 ms here; the bound is a wide guard)`, () => {
    const e = engine();
    const state = emptyEngineState();
    const gpus = (hot: boolean) => Array.from({ length: MAX_GPUS_PER_SAMPLE }, (_, g) => gpu(g, { temp_c: hot && g % 3 === 0 ? 95 : 60 }));
    for (let i = 0; i < 5; i += 1) e.advance(state, sample('bound-host', T0 + i * 10_000, gpus(false))); // warm
    const started = performance.now();
    e.advance(state, sample('bound-host', T0 + 60_000, gpus(true)));
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('a provider event naming 100,000 hosts costs the engine no more than one naming one', () => {
    const e = engine();
    const state = emptyEngineState();
    const hosts = Array.from({ length: 100_000 }, (_, i) => `h${i}`);
    const started = performance.now();
    const alerts = e.advance(
      state,
      newEnvelope({
        type: 'provider.event',
        host: 'h1',
        source: 'test',
        ts: new Date(T0).toISOString(),
        data: { provider: 'generic', event_id: 'ev-1', kind: 'maintenance', status: 'scheduled', hosts, description: 'rack swap', raw_id: 'ev-1' },
      }),
    );
    expect(performance.now() - started).toBeLessThan(2_000); // guards against a walk per host (a 100,000-host list)
    expect(alerts.map((a) => a.data.category)).toEqual(['maintenance']);
  });
});

describe('state one host keeps stays bounded', () => {
  it(`a stream of provider events with made-up ids keeps at most ${MAX_MAINTENANCE_WINDOWS_PER_HOST} windows, the open ones first`, () => {
    const e = engine();
    const state = emptyEngineState();
    const event = (i: number, status: 'scheduled' | 'completed') =>
      newEnvelope({
        type: 'provider.event',
        host: 'h1',
        source: 'test',
        ts: new Date(T0 + i).toISOString(),
        data: { provider: 'generic', event_id: `ev-${i}`, kind: 'maintenance', status, hosts: ['h1'], description: '', raw_id: `ev-${i}` },
      });
    e.advance(state, event(0, 'scheduled')); // the one real, open window
    for (let i = 1; i <= 5_000; i += 1) e.advance(state, event(i, 'completed'));
    const windows = Object.keys(state.hosts.h1!.maintenance);
    expect(windows).toHaveLength(MAX_MAINTENANCE_WINDOWS_PER_HOST);
    expect(windows).toContain('ev-0');
  });

  it(`a stream of made-up Xid codes on one GPU keeps the times of at most ${MAX_XID_CODES_PER_GPU} codes`, () => {
    const e = engine();
    const state = emptyEngineState();
    for (let xid = 0; xid < 2_000; xid += 1) {
      e.advance(
        state,
        newEnvelope({
          type: 'kernel.event',
          host: 'h1',
          source: 'test',
          ts: new Date(T0 + xid * 1_000).toISOString(),
          data: { kind: 'xid', xid, gpu: 0, message: `NVRM: Xid (PCI:0000:3b:00): ${xid}`, severity: 'error' },
        }),
      );
    }
    expect(Object.keys(state.hosts.h1!.gpus[0]!.xids).length).toBe(MAX_XID_CODES_PER_GPU);
  });

  it("a stream of kernel events on a GPU keeps each of its firing alerts' evidence to the latest 20", () => {
    const e = engine();
    const state = emptyEngineState();
    // One hardware fault that latches, then a stream of informational lines on the same GPU: each is evidence for it.
    for (let i = 0; i < 300; i += 1) {
      e.advance(
        state,
        newEnvelope({
          type: 'kernel.event',
          id: `k-${i}`,
          host: 'h1',
          source: 'test',
          ts: new Date(T0 + i * 1_000).toISOString(),
          data:
            i === 0
              ? { kind: 'xid', xid: 48, gpu: 0, message: 'NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error', severity: 'critical' }
              : { kind: 'other_gpu', gpu: 0, message: `NVRM: GPU at PCI:0000:3b:00 note ${i}`, severity: 'info' },
        }),
      );
    }
    const firing = Object.values(state.hosts.h1!.trackers).filter((t) => t.firing && t.gpu === 0);
    expect(firing.length).toBeGreaterThan(0);
    for (const tracker of firing) {
      expect(tracker.evidence.length).toBe(20);
      expect(tracker.evidence.at(-1)).toBe('k-299');
    }
  });

  it('open notices past the bound are resolved as they are forgotten: trackers stay bounded, no alert is left firing', () => {
    const e = engine();
    const state = emptyEngineState();
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (let i = 0; i < 1_000; i += 1) {
      alerts.push(
        ...e.advance(
          state,
          newEnvelope({
            type: 'provider.event',
            host: 'h1',
            source: 'test',
            ts: new Date(T0 + i).toISOString(),
            data: { provider: 'generic', event_id: `made-up-${i}`, kind: 'maintenance', status: 'scheduled', hosts: ['h1'], description: '', raw_id: `r${i}` },
          }),
        ),
      );
    }
    expect(Object.keys(state.hosts.h1!.trackers).length).toBeLessThanOrEqual(MAX_MAINTENANCE_WINDOWS_PER_HOST);
    const last = new Map(alerts.map((a) => [a.data.fingerprint, a.data.status]));
    expect([...last.values()].filter((s) => s === 'firing')).toHaveLength(MAX_MAINTENANCE_WINDOWS_PER_HOST);
  });
});

describe('property: no message stops, blinds or pollutes the engine', () => {
  it('any hostile envelopes: parse is a result or one clear error, step/advance/tick never throw, the sentinel host still pages', () => {
    fc.assert(
      fc.property(fc.array(hostileEnvelope, { minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 3_600_000 }), (lines, tickAt) => {
        const e = engine();
        const state = emptyEngineState();
        for (const line of lines) {
          const parsed = parseEnvelope(line);
          if (!parsed.ok) {
            // One clear error: names where, is one line, and does not echo a huge input.
            expect(parsed.error.message).toMatch(/^[\w.$\-_]*[^\n]*: expected /);
            expect(parsed.error.message.length).toBeLessThan(400);
            continue;
          }
          e.advance(state, parsed.value);
          e.step(state, parsed.value);
        }
        e.tick(state, T0 + tickAt);
        expect(prototypeUntouched()).toBe(true);
        const alerts = e.advance(state, xid79(SENTINEL_HOST, T0 + tickAt + 1));
        expect(pagedFor(alerts, SENTINEL_HOST)).toHaveLength(1);
      }),
      { numRuns: RUNS },
    );
  });

  it('replay of hostile lines gives alerts or one RecordingError naming the line', () => {
    fc.assert(
      fc.property(fc.array(hostileEnvelope, { minLength: 1, maxLength: 8 }), (lines) => {
        try {
          replay(engine(), [...lines, JSON.stringify(xid79(SENTINEL_HOST, T0))]);
        } catch (error) {
          expect(error).toBeInstanceOf(RecordingError);
          expect((error as RecordingError).message).toMatch(/^line \d+: /);
        }
        // What parses is judged (a sample dated too far ahead of the stream's clock is passed over, as the service
        // dead-letters it), and the sentinel is paged, whatever came before it.
        const valid = lines.filter((l) => parseEnvelope(l).ok);
        const skipped: string[] = [];
        const alerts = replay(engine(), [...valid, JSON.stringify(xid79(SENTINEL_HOST, T0))], emptyEngineState(), {
          skip: (_line, reason) => skipped.push(reason),
        });
        for (const reason of skipped) expect(reason).toMatch(/the host's clock is ahead/);
        expect(pagedFor(alerts, SENTINEL_HOST).length).toBeGreaterThanOrEqual(1);
        expect(prototypeUntouched()).toBe(true);
      }),
      { numRuns: Math.ceil(RUNS / 3) },
    );
  });
});
