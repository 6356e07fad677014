import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { type Envelope, type EnvelopeOf, type GpuMetrics, type GpuSampleData } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { emptyEngineState, newHostState, type EngineState } from './engine-state.ts';
import { MAX_ALERT_SERIES_PER_HOST, renderFleetMetrics, renderFleetMetricsCounted } from './fleet-metrics.ts';
import { loadRuleSet } from './load-rules.ts';
import { hostName, syntheticFleet, type FleetOptions } from '@gpualert/test-support';
import { StreamClock } from './time-policy.ts';

const rules = loadRuleSet();
if (!rules.ok) throw new Error(rules.errors.map(formatRuleError).join('\n'));
const ruleSet = rules.value;
const catalog = loadXidCatalog();
if (!catalog.ok) throw new Error('catalog');
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;

/** The fleet judged as the service judges it, with each host's latest sample kept as the service's metrics keep it. */
function judged(options: Partial<FleetOptions>): { state: EngineState; samples: Map<string, GpuSampleData>; alerts: EnvelopeOf<'alert'>[] } {
  const engine = new Engine(ruleSet, catalog.ok ? catalog.value : (undefined as never));
  const state = emptyEngineState();
  const clock = new StreamClock(engine);
  const samples = new Map<string, GpuSampleData>();
  const alerts: EnvelopeOf<'alert'>[] = [];
  for (const envelope of syntheticFleet({ hosts: 4, gpusPerHost: 8, start: T0, minutes: 60, seed: 7, ...options }) as Iterable<Envelope>) {
    alerts.push(...clock.judge(state, envelope));
    if (envelope.type === 'gpu.sample') samples.set(envelope.host, envelope.data);
  }
  return { state, samples, alerts };
}

interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus' text format, read back strictly: every sample line under its family's HELP and TYPE. */
function parse(text: string): Series[] {
  const out: Series[] = [];
  const typed = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\w+) (gauge|counter|histogram)$/.exec(line);
    if (type) {
      expect(typed.has(type[1]!), `${type[1]} typed twice`).toBe(false);
      typed.add(type[1]!);
      continue;
    }
    if (line.startsWith('# HELP ')) continue;
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(m, line).not.toBeNull();
    expect(typed.has(m![1]!), `${m![1]} before its TYPE`).toBe(true);
    const labels: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const l of (m![2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    out.push({ name: m![1]!, labels, value: Number(m![3]) });
  }
  return out;
}

const pick = (series: Series[], name: string, labels: Record<string, string> = {}) =>
  series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
const one = (series: Series[], name: string, labels: Record<string, string>) => {
  const found = pick(series, name, labels);
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return found[0]!.value;
};

/** Host 0 idles; after 40 minutes its GPU 4 idles 18 °C above its own normal (the baseline scenario). */
const hotIdleGpu = (h: number, gpu: GpuMetrics, at: number): GpuMetrics => {
  const idle = { ...gpu, util_pct: 0, processes: 0, temp_c: 34 + (gpu.index % 2), power_w: 72, throttle: ['gpu_idle'] as GpuMetrics['throttle'], pcie_gen: 1 };
  return h === 0 && gpu.index === 4 && at > T0 + 40 * MIN ? { ...idle, temp_c: 52 } : idle;
};

describe('the fleet as /metrics shows it', () => {
  it('shows the GPU far from its own normal: its state, its band, its z and its distance from its siblings; its siblings stay green', () => {
    const { state, samples, alerts } = judged({ minutes: 80, fault: hotIdleGpu });
    const hot = alerts.filter((a) => a.data.status === 'firing' && a.data.rule === 'gpu-temp-baseline');
    expect(hot.map((a) => [a.host, a.data.gpu?.index])).toEqual([[hostName(0), 4]]);
    const series = parse(renderFleetMetrics({ state, ruleSet, samples }));
    const h0 = hostName(0);
    expect(one(series, 'gpualert_gpu_state', { host: h0, gpu: '4' })).toBe(1 + ['info', 'warning', 'error', 'critical'].indexOf(hot[0]!.data.severity));
    for (const gpu of ['0', '1', '2', '3', '5', '6', '7']) expect(one(series, 'gpualert_gpu_state', { host: h0, gpu }), `GPU ${gpu}`).toBe(0);
    expect(one(series, 'gpualert_gpu_sample_value', { host: h0, gpu: '4', metric: 'temp_c' })).toBe(52);
    const mean = one(series, 'gpualert_gpu_baseline_mean', { host: h0, gpu: '4', metric: 'temp_c' });
    const spread = one(series, 'gpualert_gpu_baseline_spread', { host: h0, gpu: '4', metric: 'temp_c' });
    expect(mean).toBeGreaterThan(30);
    expect(mean).toBeLessThan(38); // learned while normal: the fault was not taken for the new normal
    expect(one(series, 'gpualert_gpu_baseline_z', { host: h0, gpu: '4', metric: 'temp_c' })).toBeCloseTo((52 - mean) / spread, 2);
    expect(one(series, 'gpualert_gpu_baseline_z', { host: h0, gpu: '4', metric: 'temp_c' })).toBeGreaterThan(4); // the rule's sigmas
    expect(Math.abs(one(series, 'gpualert_gpu_baseline_z', { host: h0, gpu: '2', metric: 'temp_c' }))).toBeLessThan(4);
    // Even GPUs idle at 34 °C, odd ones at 35, the hot one at 52: the host's median is 35, 17 below it.
    expect(one(series, 'gpualert_gpu_sibling_delta', { host: h0, gpu: '4', metric: 'temp_c' })).toBe(17);
    expect(one(series, 'gpualert_gpu_sibling_delta', { host: h0, gpu: '2', metric: 'temp_c' })).toBe(-1);
    // The alert itself, its start as the alert envelope says, and the fleet's counts.
    expect(one(series, 'gpualert_alert_started_timestamp_seconds', { host: h0, gpu: '4', rule: 'gpu-temp-baseline' })).toBe(
      Date.parse(hot[0]!.data.starts_at) / 1000,
    );
    const firingNow = Object.values(state.hosts)
      .flatMap((h) => Object.values(h.trackers))
      .filter((t) => t.told === 'firing');
    expect(pick(series, 'gpualert_alerts_firing').reduce((sum, s) => sum + s.value, 0)).toBe(firingNow.length);
    expect(one(series, 'gpualert_alerts_firing', { severity: hot[0]!.data.severity, category: 'baseline' })).toBe(1);
    expect(pick(series, 'gpualert_alerts_firing')).toHaveLength(4 * 20); // every severity × category, zeros too
    expect(one(series, 'gpualert_hosts', {})).toBe(4);
    expect(one(series, 'gpualert_gpus', {})).toBe(32);
    expect(one(series, 'gpualert_incident_open', { host: h0 })).toBe(1);
    expect(one(series, 'gpualert_incidents_open', {})).toBe(1);
    expect(one(series, 'gpualert_host_template', { host: h0 })).toBe(1);
    expect(pick(series, 'gpualert_host_template', { host: h0 })[0]!.labels.template).toBe('h100');
    expect(one(series, 'gpualert_host_last_seen_timestamp_seconds', { host: h0 })).toBe(state.hosts[h0]!.lastSample! / 1000);
  });

  it('a healthy fleet: every GPU at state 0, no alert series, no open incident', () => {
    const { state, samples } = judged({ minutes: 30 });
    const series = parse(renderFleetMetrics({ state, ruleSet, samples }));
    expect(pick(series, 'gpualert_gpu_state')).toHaveLength(32);
    expect(pick(series, 'gpualert_gpu_state').every((s) => s.value === 0)).toBe(true);
    expect(pick(series, 'gpualert_alert_started_timestamp_seconds')).toEqual([]);
    expect(one(series, 'gpualert_incidents_open', {})).toBe(0);
    // The same render a faulty fleet gets: the "no alert" above is not a render that shows none.
    const faulty = judged({ minutes: 80, fault: hotIdleGpu });
    expect(pick(parse(renderFleetMetrics({ ...faulty, ruleSet })), 'gpualert_alert_started_timestamp_seconds').length).toBeGreaterThan(0);
  });

  it("prices the idle streak of a paid host from the idle-cost rule's state", () => {
    const { state, samples } = judged({ hosts: 1, minutes: 5 * 60, fault: (_h, gpu) => ({ ...gpu, util_pct: 0, processes: 0, temp_c: 34, power_w: 72 }) });
    const host = state.hosts[hostName(0)]!;
    const since = host.trackers['idle-cost|']!.since!;
    const hours = ((Math.max(host.lastSample!, host.lastTick) - since) / 3_600_000) * 8;
    expect(hours).toBeGreaterThan(4 * 8);
    const seen: Record<string, string>[] = [];
    const prices = {
      currency: 'USD',
      rate: (labels: Readonly<Record<string, string>>) => (seen.push({ ...labels }), labels.provider === 'gcp' ? 2.5 : undefined),
    };
    const series = parse(renderFleetMetrics({ state, ruleSet, samples, prices }));
    expect(one(series, 'gpualert_host_idle_gpu_hours', { host: hostName(0) })).toBeCloseTo(hours, 2);
    expect(one(series, 'gpualert_idle_cost', { currency: 'USD' })).toBeCloseTo(hours * 2.5, 1);
    expect(seen[0]).toMatchObject({ provider: 'gcp', gpu_model: 'NVIDIA H100 80GB HBM3', cluster: 'lab' });
    // No price for the host: the hours are counted as unpriced, not as free.
    const unpriced = parse(renderFleetMetrics({ state, ruleSet, samples, prices: { currency: 'USD', rate: () => undefined } }));
    expect(one(unpriced, 'gpualert_idle_cost', {})).toBe(0);
    expect(one(unpriced, 'gpualert_idle_gpu_hours_unpriced', {})).toBeCloseTo(hours, 2);
  });

  it("between idle and busy the band is the nearer load's, and a GPU with no utilisation has none", () => {
    const state = emptyEngineState();
    const host = (state.hosts['h'] = newHostState('h', {}, 'default'));
    host.lastSample = T0;
    for (const index of ['0', '1', '2']) {
      host.gpus[index] = {
        missing: 0,
        baselines: { 'temp_c:idle': { n: 500, mean: 35, dev: 1 }, 'temp_c:busy': { n: 500, mean: 65, dev: 2 } },
        counters: {},
        recent: [],
        xids: {},
      };
    }
    const gpu = (index: number, util: number | null) => ({ index, util_pct: util, temp_c: 50, power_w: null }) as unknown as GpuMetrics;
    const samples = new Map([['h', { gpus: [gpu(0, 20), gpu(1, 40), gpu(2, null)] } as GpuSampleData]]);
    const series = parse(renderFleetMetrics({ state, ruleSet, samples }));
    expect(one(series, 'gpualert_gpu_baseline_mean', { host: 'h', gpu: '0', metric: 'temp_c' })).toBe(35); // 20 % is nearer idle (10) than busy (50)
    expect(one(series, 'gpualert_gpu_baseline_mean', { host: 'h', gpu: '1', metric: 'temp_c' })).toBe(65);
    expect(pick(series, 'gpualert_gpu_baseline_mean', { gpu: '2' })).toEqual([]);
    expect(one(series, 'gpualert_gpu_sample_value', { host: 'h', gpu: '2', metric: 'temp_c' })).toBe(50);
  });

  it('a hostile host name and maintenance window id stay one escaped, bounded label value each', () => {
    const state = emptyEngineState();
    const name = 'evil"} 1\ngpualert_hosts{x="\\';
    const host = (state.hosts[name] = newHostState(name, {}, 'default'));
    host.lastSample = T0;
    host.gpus['0'] = { missing: 0, baselines: {}, counters: {}, recent: [], xids: {} };
    host.maintenance['w'.repeat(10_000)] = { status: 'scheduled', start: T0 + 3_600_000, end: T0 + 7_200_000, description: 'x' };
    host.maintenance['__proto__'] = { status: 'started', start: T0 - 60_000, description: 'y' };
    const series = parse(renderFleetMetrics({ state, ruleSet, samples: new Map() }));
    expect(one(series, 'gpualert_hosts', {})).toBe(1);
    expect(one(series, 'gpualert_gpu_state', { host: name, gpu: '0' })).toBe(0);
    const windows = pick(series, 'gpualert_maintenance_window_start_timestamp_seconds');
    expect(windows.map((w) => w.labels.window!.length).sort()).toEqual([128, 9]);
    expect(one(series, 'gpualert_host_maintenance_open', { host: name })).toBe(1); // the started window
  });

  it("one host's thousands of BMC sensors add at most MAX_ALERT_SERIES_PER_HOST alert series, the worst kept, the rest counted as dropped", () => {
    const state = emptyEngineState();
    const host = (state.hosts['bmc-storm'] = newHostState('bmc-storm', {}, 'default'));
    host.lastSample = T0;
    host.gpus['0'] = { missing: 0, baselines: {}, counters: {}, recent: [], xids: {} };
    const tracker = (rule: string, severity: 'warning' | 'critical') => ({
      rule,
      category: 'other',
      firing: true,
      told: 'firing' as const,
      startsAt: T0,
      severity,
      baseSeverity: severity,
      lastBreach: T0,
      latched: false,
      transitions: [],
      flapping: false,
      evidence: [],
      summary: rule,
      action: '',
    });
    // A BMC that names 2,000 sensors (one alert each), then the one critical that matters.
    for (let i = 0; i < 2_000; i += 1) host.trackers[`bmc-sel|S${i}`] = tracker('bmc-sel', 'warning');
    host.trackers['bmc-sel|PSU1'] = tracker('bmc-psu', 'critical');
    const quiet = newHostState('quiet', {}, 'default');
    quiet.trackers['x'] = tracker('gpu-temp', 'warning');
    state.hosts['quiet'] = quiet;
    const { text, dropped } = renderFleetMetricsCounted({ state, ruleSet, samples: new Map() });
    const series = parse(text);
    const alerts = pick(series, 'gpualert_alert_started_timestamp_seconds', { host: 'bmc-storm' });
    expect(alerts).toHaveLength(MAX_ALERT_SERIES_PER_HOST);
    expect(alerts.filter((a) => a.labels.severity === 'critical').map((a) => a.labels.rule)).toEqual(['bmc-psu']);
    expect(dropped).toBe(2_001 - MAX_ALERT_SERIES_PER_HOST);
    expect(pick(series, 'gpualert_alert_started_timestamp_seconds', { host: 'quiet' })).toHaveLength(1); // another host keeps its own
    // The counts stay whole: every alert firing is counted, shown or not.
    expect(one(series, 'gpualert_alerts_firing', { severity: 'warning', category: 'other' })).toBe(2_001);
    expect(one(series, 'gpualert_gpu_state', { host: 'bmc-storm', gpu: '0' })).toBe(4);
    // The same host under the cap shows every alert, nothing dropped.
    expect(renderFleetMetricsCounted({ state, ruleSet, samples: new Map(), maxAlertSeriesPerHost: 5_000 }).dropped).toBe(0);
  });
});
