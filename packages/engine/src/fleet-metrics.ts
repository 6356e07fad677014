import { ALERT_CATEGORIES, SEVERITIES, severityRank, type GpuSampleData } from '@gpualert/schema';
import { inMaintenance } from './conditions.ts';
import type { EngineState, HostState, Tracker } from './engine-state.ts';
import { fallbackTemplate, type BoundTemplate, type RuleSet } from './load-rules.ts';
import { middleOf } from './peer-medians.ts';
import { hostKey } from './judges/keys.ts';
import type { RuleOf } from './rule-set.ts';

/**
 * The fleet as the engine knows it, in Prometheus' text format (docs/metrics.md lists every
 * metric, its labels and its series per GPU and per host). Pure: the engine's state, each host's
 * latest sample and the prices in, text out; computed when scraped, so judging pays nothing for it.
 * Each host's own clock (its latest sample or tick) is its "now", as the engine judges it: a
 * replayed recording shows the fleet as it was then.
 */
export interface FleetMetricsInput {
  readonly state: EngineState;
  readonly ruleSet: RuleSet;
  /** Each host's latest `gpu.sample` data (the engine keeps no raw values in its state). */
  readonly samples: ReadonlyMap<string, GpuSampleData>;
  /** What a GPU-hour costs (the usage rollups' price list); without it idle hours are not priced. */
  readonly prices?: { readonly currency: string; rate(labels: Readonly<Record<string, string>>): number | undefined };
  /** Alert series one host may add (`MAX_ALERT_SERIES_PER_HOST` unless said); past it the worst severities stay. */
  readonly maxAlertSeriesPerHost?: number;
}

/**
 * Alert series (`gpualert_alert_started_timestamp_seconds`) one host may add to a scrape. The
 * host layer keys alerts by what the host names (a BMC's sensors, fans, ports): 20,000 sensors
 * of one host must not add 20,000 series. 256 is 37 bundled rules on 6 GPUs at once, plus room.
 */
export const MAX_ALERT_SERIES_PER_HOST = 256;

/** The raw values each GPU exports (`gpualert_gpu_sample_value{metric}`). */
export const SAMPLE_VALUE_METRICS = ['temp_c', 'power_w', 'util_pct'] as const;
/** Label values from outside (window ids, models, versions) are cut to this many characters. */
export const MAX_LABEL_VALUE_LENGTH = 128;

/** A GPU's state: 0 when nothing fires on it (or on its host, maintenance and drift aside), else the worst firing severity's rank + 1. */
export const GPU_STATE_VALUES: Readonly<Record<'ok' | (typeof SEVERITIES)[number], number>> = { ok: 0, info: 1, warning: 2, error: 3, critical: 4 };

interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge';
  readonly lines: string[];
}

export function renderFleetMetrics(input: FleetMetricsInput): string {
  return renderFleetMetricsCounted(input).text;
}

/** The fleet's text and how many alert series the per-host cap left out of it (`gpualert_metrics_series_dropped_total`). */
export function renderFleetMetricsCounted(input: FleetMetricsInput): FleetMetricsText {
  const steps = fleetMetricsSteps(input);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

export interface FleetMetricsText {
  readonly text: string;
  readonly dropped: number;
}

/** Lines of one family joined in one step of a render. */
const LINES_A_STEP = 4_096;

/**
 * The same render one step at a time: it pauses after each host and each piece of a family's
 * text, so a caller can hand the event loop back between steps (at 100,000 GPUs one engine's
 * render is 1.3 million series, over a second of work). Each host is rendered as it is at its
 * step; the hosts are those of the state when the render began that the state still has then.
 */
export function* fleetMetricsSteps(input: FleetMetricsInput): Generator<void, FleetMetricsText, void> {
  const f = families();
  const maxAlertSeries = input.maxAlertSeriesPerHost ?? MAX_ALERT_SERIES_PER_HOST;
  let dropped = 0;
  const firing = new Map<string, number>(); // `${severity}\u0000${category}` → count
  let hosts = 0;
  let gpus = 0;
  let incidents = 0;
  let idleCost = 0;
  let idleUnpriced = 0;
  // The names now, each host looked up at its own step: one forgotten, or handed to another engine
  // (the state's hosts replaced) while the render pauses, is not rendered or counted.
  for (const name of Object.keys(input.state.hosts)) {
    const host = input.state.hosts[name];
    if (host === undefined) continue;
    hosts += 1;
    const bound = boundOf(input.ruleSet, host.template);
    const now = Math.max(host.lastSample ?? 0, host.lastTick);
    const h = `host="${escape(host.host)}"`;
    const sample = input.samples.get(host.host);

    // Alerts: the worst per GPU, the host's own (a host down darkens every GPU of it), and one series each.
    let hostWorst = -1;
    let drift = 0;
    let incidentAlerts = false;
    const worstByGpu = new Map<number, number>();
    const alertLines: { rank: number; tracker: Tracker }[] = [];
    for (const tracker of Object.values(host.trackers)) {
      if (tracker.told !== 'firing') continue;
      const rank = severityRank(tracker.severity);
      const key = `${tracker.severity}\u0000${tracker.category}`;
      firing.set(key, (firing.get(key) ?? 0) + 1);
      if (tracker.category === 'drift') drift = 1;
      // A maintenance notice or a version drift is about the host, not a fault of its GPUs: they
      // have panels of their own, and they open no incident (as in conditions.ts).
      const aboutTheHost = tracker.category === 'drift' || tracker.category === 'maintenance';
      if (!aboutTheHost) incidentAlerts = true;
      if (tracker.gpu !== undefined) worstByGpu.set(tracker.gpu, Math.max(worstByGpu.get(tracker.gpu) ?? -1, rank));
      else if (!aboutTheHost) hostWorst = Math.max(hostWorst, rank);
      alertLines.push({ rank, tracker });
    }
    // Past the cap the worst severities stay (a stable sort keeps the first of equals); the rest count as dropped.
    if (alertLines.length > maxAlertSeries) {
      alertLines.sort((a, b) => b.rank - a.rank);
      dropped += alertLines.length - maxAlertSeries;
      alertLines.length = maxAlertSeries;
    }
    for (const { tracker } of alertLines) {
      f.alert.lines.push(
        `gpualert_alert_started_timestamp_seconds{${h},gpu="${tracker.gpu ?? ''}",rule="${escape(tracker.rule)}",category="${escape(tracker.category)}",severity="${tracker.severity}"} ${seconds(tracker.startsAt ?? now)}`,
      );
    }

    f.lastSeen.lines.push(`gpualert_host_last_seen_timestamp_seconds{${h}} ${seconds(host.lastSample ?? 0)}`);
    f.template.lines.push(`gpualert_host_template{${h},template="${escape(host.template)}"} 1`);
    const inv = host.inventory;
    f.info.lines.push(
      `gpualert_host_info{${h},cluster="${escape(host.labels.cluster ?? '')}",gpu_model="${escape(inv?.gpu_model ?? '')}",driver="${escape(inv?.driver ?? '')}",cuda="${escape(inv?.cuda ?? '')}",provider="${escape(inv?.provider ?? '')}"} 1`,
    );
    f.drift.lines.push(`gpualert_host_drift{${h}} ${drift}`);
    f.maintenance.lines.push(`gpualert_host_maintenance_open{${h}} ${inMaintenance(host, now) ? 1 : 0}`);
    for (const [id, window] of Object.entries(host.maintenance)) {
      const w = `${h},window="${escape(id)}",status="${window.status}"`;
      if (window.start !== undefined) f.windowStart.lines.push(`gpualert_maintenance_window_start_timestamp_seconds{${w}} ${seconds(window.start)}`);
      if (window.end !== undefined) f.windowEnd.lines.push(`gpualert_maintenance_window_end_timestamp_seconds{${w}} ${seconds(window.end)}`);
    }
    if (host.incident && (incidentAlerts || now <= host.incident.until)) {
      incidents += 1;
      f.incident.lines.push(`gpualert_incident_open{${h},incident="${escape(host.incident.fingerprint)}"} 1`);
    }

    const idleHours = idleGpuHours(host, bound, now, sample?.gpus.length ?? 0);
    f.idleHours.lines.push(`gpualert_host_idle_gpu_hours{${h}} ${idleHours}`);
    if (idleHours > 0) {
      const rate = input.prices?.rate({ ...host.labels, ...(inv?.provider ? { provider: inv.provider } : {}), ...(inv ? { gpu_model: inv.gpu_model } : {}) });
      if (rate === undefined) idleUnpriced += idleHours;
      else idleCost += idleHours * rate;
    }

    // Per GPU: its state, its latest values, its band at its current load, its distance from its siblings.
    const baselines = baselineRules(bound);
    const medians = sample ? siblingMedians(sample, baselines) : undefined;
    for (const [index, gs] of Object.entries(host.gpus)) {
      gpus += 1;
      const g = `${h},gpu="${index}"`;
      const worst = Math.max(hostWorst, worstByGpu.get(Number(index)) ?? -1);
      f.state.lines.push(`gpualert_gpu_state{${g}} ${worst + 1}`);
      const gpu = sample?.gpus.find((s) => String(s.index) === index);
      if (!gpu) continue;
      for (const metric of SAMPLE_VALUE_METRICS) {
        const value = gpu[metric];
        if (value !== null) f.value.lines.push(`gpualert_gpu_sample_value{${g},metric="${metric}"} ${value}`);
      }
      for (const rule of baselines) {
        const value = gpu[rule.metric];
        if (value === null) continue;
        const median = medians?.get(rule.metric);
        if (median !== undefined) f.sibling.lines.push(`gpualert_gpu_sibling_delta{${g},metric="${rule.metric}"} ${round(value - median)}`);
        const band = baselineBand(rule, bound, gs.baselines, gpu.util_pct);
        if (!band) continue;
        f.mean.lines.push(`gpualert_gpu_baseline_mean{${g},metric="${rule.metric}"} ${round(band.mean)}`);
        f.spread.lines.push(`gpualert_gpu_baseline_spread{${g},metric="${rule.metric}"} ${round(band.dev)}`);
        f.z.lines.push(`gpualert_gpu_baseline_z{${g},metric="${rule.metric}"} ${round((value - band.mean) / band.dev)}`);
      }
    }
    yield;
  }
  f.hosts.lines.push(`gpualert_hosts ${hosts}`);
  f.gpus.lines.push(`gpualert_gpus ${gpus}`);
  f.incidents.lines.push(`gpualert_incidents_open ${incidents}`);
  f.idleCost.lines.push(`gpualert_idle_cost{currency="${escape(input.prices?.currency ?? '')}"} ${Math.round(idleCost * 100) / 100}`);
  f.idleUnpriced.lines.push(`gpualert_idle_gpu_hours_unpriced ${idleUnpriced}`);
  // Every severity × category, zeros included: a dashboard's series do not come and go.
  for (const severity of SEVERITIES) {
    for (const category of ALERT_CATEGORIES) {
      f.firing.lines.push(`gpualert_alerts_firing{severity="${severity}",category="${category}"} ${firing.get(`${severity}\u0000${category}`) ?? 0}`);
    }
  }
  let out = '';
  for (const family of Object.values(f)) {
    if (family.lines.length === 0) continue;
    out += `# HELP ${family.name} ${family.help}\n# TYPE ${family.name} ${family.type}\n`;
    // A family of 100,000 GPUs is 300,000 lines: joined a piece a step.
    for (let i = 0; i < family.lines.length; i += LINES_A_STEP) {
      out += `${family.lines.slice(i, i + LINES_A_STEP).join('\n')}\n`;
      yield;
    }
  }
  return { text: out, dropped };
}

function families() {
  const gauge = (name: string, help: string): Family => ({ name, help, type: 'gauge', lines: [] });
  return {
    state: gauge(
      'gpualert_gpu_state',
      'Worst severity firing on the GPU or on its host (maintenance and drift aside): 0 none, 1 info, 2 warning, 3 error, 4 critical.',
    ),
    value: gauge('gpualert_gpu_sample_value', "The GPU's latest sampled value of metric (temp_c in Celsius, power_w in watts, util_pct in percent)."),
    mean: gauge('gpualert_gpu_baseline_mean', "The GPU's own normal of metric at its current load (idle or busy), as the baseline rule judges it."),
    spread: gauge('gpualert_gpu_baseline_spread', "The spread (mean absolute deviation) of the GPU's own normal of metric at its current load."),
    z: gauge('gpualert_gpu_baseline_z', "How far the GPU's latest value is from its own normal, in spreads."),
    sibling: gauge('gpualert_gpu_sibling_delta', "The GPU's latest value minus the median of the same metric across its host's GPUs."),
    lastSeen: gauge('gpualert_host_last_seen_timestamp_seconds', "Event time of the host's latest GPU sample."),
    template: gauge('gpualert_host_template', 'The host template bound to the host (1).'),
    info: gauge('gpualert_host_info', "The host's inventory and cluster (1)."),
    drift: gauge('gpualert_host_drift', '1 while a drift alert fires on the host (driver or CUDA off its template or cluster).'),
    maintenance: gauge('gpualert_host_maintenance_open', '1 while the host is inside (or 15 minutes around) an announced maintenance window.'),
    windowStart: gauge('gpualert_maintenance_window_start_timestamp_seconds', 'Start of an announced maintenance window.'),
    windowEnd: gauge('gpualert_maintenance_window_end_timestamp_seconds', 'End of an announced maintenance window.'),
    idleHours: gauge('gpualert_host_idle_gpu_hours', "GPU-hours of the host's current idle streak on a paid instance (the idle-cost rule's condition)."),
    alert: gauge('gpualert_alert_started_timestamp_seconds', 'One series per firing alert: when it started.'),
    incident: gauge(
      'gpualert_incident_open',
      'One series per open incident (1): its host still has an alert firing, or its last alert is under 5 minutes old.',
    ),
    hosts: gauge('gpualert_hosts', 'Hosts this engine owns.'),
    gpus: gauge('gpualert_gpus', 'GPUs of the hosts this engine owns.'),
    firing: gauge('gpualert_alerts_firing', 'Alerts firing, by severity and category.'),
    incidents: gauge('gpualert_incidents_open', 'Open incidents.'),
    idleCost: gauge('gpualert_idle_cost', 'What the current idle streaks of paid GPUs cost so far, in currency.'),
    idleUnpriced: gauge('gpualert_idle_gpu_hours_unpriced', 'Idle GPU-hours no price matched.'),
  };
}

type BaselineRule = RuleOf<'baseline'>;

const TEMPLATES = new WeakMap<RuleSet, Map<string, BoundTemplate>>();
const BASELINES = new WeakMap<BoundTemplate, { baselines: BaselineRule[]; idle: Set<string> }>();

function boundOf(ruleSet: RuleSet, name: string): BoundTemplate {
  let byName = TEMPLATES.get(ruleSet);
  if (!byName) TEMPLATES.set(ruleSet, (byName = new Map(ruleSet.templates.map((t) => [t.template.name, t]))));
  // As the engine does: a host whose template is gone is judged by the last (the fallback).
  return byName.get(name) ?? fallbackTemplate(ruleSet);
}

function rulesOf(bound: BoundTemplate): { baselines: BaselineRule[]; idle: Set<string> } {
  let rules = BASELINES.get(bound);
  if (!rules) {
    const baselines: BaselineRule[] = [];
    const seen = new Set<string>();
    for (const rule of bound.rules) {
      if (rule.kind !== 'baseline' || seen.has(rule.metric)) continue; // the first rule of a metric draws its band
      seen.add(rule.metric);
      baselines.push(rule);
    }
    rules = { baselines, idle: new Set(bound.rules.filter((r) => r.kind === 'idle_cost').map((r) => r.id)) };
    BASELINES.set(bound, rules);
  }
  return rules;
}

const baselineRules = (bound: BoundTemplate) => rulesOf(bound).baselines;

/**
 * The band the baseline judge (judges/baseline.ts) compares a value with: the learned normal at the
 * GPU's load, blended with the template's prior while young, its spread floored. Between idle and
 * busy (where the judge judges neither) the nearer, as the console draws it; undefined without a
 * utilisation or before anything is known.
 */
export function baselineBand(
  rule: BaselineRule,
  bound: BoundTemplate,
  baselines: Readonly<Record<string, { n: number; mean: number; dev: number }>>,
  util: number | null,
): { mean: number; dev: number } | undefined {
  if (util === null) return undefined;
  const bucket = util < rule.idle_below || (util < rule.busy_at_least && util - rule.idle_below < rule.busy_at_least - util) ? 'idle' : 'busy';
  const prior = bound.template.priors[rule.metric]?.[bucket];
  const learned = baselines[`${rule.metric}:${bucket}`] ?? (prior ? { n: 0, mean: prior[0], dev: prior[1] } : undefined);
  if (!learned) return undefined;
  const weight = Math.min(1, learned.n / rule.warmup_samples);
  const mean = weight * learned.mean + (1 - weight) * (prior?.[0] ?? learned.mean);
  const dev = Math.max(weight * learned.dev + (1 - weight) * (prior?.[1] ?? learned.dev), rule.min_delta / rule.sigmas / 2);
  return { mean, dev };
}

/** The median of each baseline metric across the sample's GPUs (a host has a few; sorting is cheap). */
function siblingMedians(sample: GpuSampleData, rules: readonly BaselineRule[]): Map<string, number> {
  const medians = new Map<string, number>();
  for (const rule of rules) {
    const values: number[] = [];
    for (const gpu of sample.gpus) {
      const v = gpu[rule.metric];
      if (v !== null) values.push(v);
    }
    if (values.length < 2) continue; // one GPU has no siblings
    medians.set(rule.metric, middleOf(values.sort((a, b) => a - b)));
  }
  return medians;
}

/** GPU-hours of the host's idle streak: from when the idle-cost condition began to hold, times its GPUs. */
function idleGpuHours(host: HostState, bound: BoundTemplate, now: number, gpus: number): number {
  const { idle } = rulesOf(bound);
  let since: number | undefined;
  for (const id of idle) {
    const tracker = host.trackers[hostKey(id)];
    if (tracker?.since !== undefined) since = Math.min(since ?? tracker.since, tracker.since);
  }
  if (since === undefined || gpus === 0) return 0;
  return Math.round((Math.max(0, now - since) / 3_600_000) * gpus * 1000) / 1000;
}

/** A label value in the text format: backslash, quote and newline escaped, cut to a bound. */
function escape(value: string): string {
  const cut = value.length > MAX_LABEL_VALUE_LENGTH ? value.slice(0, MAX_LABEL_VALUE_LENGTH) : value;
  return /[\\"\n]/.test(cut) ? cut.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : cut;
}

const seconds = (ms: number) => ms / 1000;

/** Four decimals: past them a figure is noise, and shorter text renders and parses faster. */
const round = (value: number) => Math.round(value * 10_000) / 10_000;
