import { KernelLogParser } from '@gpualert/kernel-log';
import { ADAPTERS } from '@gpualert/providers';
import type { XidCatalog } from '@gpualert/rules';
import {
  newEnvelope, severityRank, stableId, type AlertData, type Envelope, type EnvelopeOf, type GpuMetrics, type KernelEventData, type Severity,
} from '@gpualert/schema';
import { busByIndex, forgetBusIndex } from './bus-by-index.ts';
import { Conditions, fill, fingerprintOf, type Transition } from './conditions.ts';
import { dict, newGpuState, newHostState, type Baseline, type EngineState, type GpuState, type HostState } from './engine-state.ts';
import { bindTemplate, type BoundTemplate, type RuleSet } from './load-rules.ts';
import { median, SamplePeers } from './peer-medians.ts';
import type { RuleOf, RuleSpec } from './rule-set.ts';

export const ENGINE_SOURCE = 'engine/0.1.0';

/** Which kernel event kinds are hardware faults that stay firing until recovery is seen. */
const HARDWARE_CAUSES = new Set(['memory', 'pcie', 'nvlink', 'firmware']);
const EVENT_CATEGORY: Record<KernelEventData['kind'], AlertData['category']> = {
  xid: 'xid', sxid: 'nvlink', nvlink: 'nvlink', pcie_aer: 'pcie', fallen_off_bus: 'fallen_off_bus', ecc: 'ecc',
  row_remap: 'row_remap', oom_kill: 'kernel', thermal: 'thermal', gsp: 'xid', other_gpu: 'kernel', host: 'kernel',
};
const EVIDENCE_WINDOW_MS = 5 * 60_000;
const BUSY_UTIL = 50;
const IDLE_UTIL = 10;

/**
 * The judging core: `step` one envelope, `tick` the clock. Deterministic (event time is the
 * clock, nothing else is read); it updates the state it is given in place, for speed, and
 * returns the alert envelopes the step produced.
 */
export class Engine {
  private readonly parsers = new Map<string, KernelLogParser>();
  private readonly byName: Map<string, BoundTemplate>;

  /**
   * `parseRaw`: judge `kernel.line` and `provider.raw` envelopes by parsing them (recordings);
   * the live service leaves them, since the collectors and the intake publish the parsed form.
   */
  constructor(private readonly ruleSet: RuleSet, private readonly catalog: XidCatalog, private readonly parseRaw = true) {
    this.byName = new Map(ruleSet.templates.map((t) => [t.template.name, t]));
  }

  /**
   * One envelope the way the service sees it: the host's own clock ticks first (every 10 s of
   * its samples' event time), then the envelope is judged. Deterministic per host and topic,
   * whatever the batching.
   */
  advance(state: EngineState, envelope: Envelope): EnvelopeOf<'alert'>[] {
    const at = Date.parse(envelope.ts);
    const host = state.hosts[envelope.host];
    // Only samples move a host's clock: other topics may run ahead of or behind its samples, and
    // a kernel event read before the samples of the same minute must not make the host look silent.
    const due = envelope.type === 'gpu.sample' && host !== undefined && at - host.lastTick >= 10_000;
    const alerts = due ? this.tickHost(host, at) : [];
    if (due) host.lastTick = at;
    alerts.push(...this.step(state, envelope));
    const fresh = state.hosts[envelope.host]!;
    if (fresh.lastTick === 0) fresh.lastTick = at;
    return alerts;
  }

  step(state: EngineState, envelope: Envelope): EnvelopeOf<'alert'>[] {
    const at = Date.parse(envelope.ts);
    const host = this.host(state, envelope.host, envelope.labels);
    host.now = Math.max(host.now, at);
    const out: Transition[] = [];
    const bound = this.bound(host);
    const conditions = new Conditions([bound.template.name], out);
    switch (envelope.type) {
      case 'gpu.sample':
        this.sample(state, host, bound, conditions, envelope, at);
        break;
      case 'kernel.event':
        this.kernelEvent(host, bound, conditions, envelope.id, envelope.data, at);
        break;
      case 'kernel.line':
        if (!this.parseRaw) break;
        // Raw lines in a recording are parsed as the collector would, then judged.
        for (const event of this.parser(host).push(envelope.data.line, at)) {
          this.kernelEvent(host, bound, conditions, stableId(envelope.id, event.position), event.data, Date.parse(event.ts));
        }
        break;
      case 'provider.raw': {
        if (!this.parseRaw) break;
        const result = ADAPTERS[envelope.data.provider](envelope.data.payload, { host: envelope.host, receivedAt: envelope.ts });
        if (result.ok) for (const data of result.events) this.providerEvent(host, bound, conditions, data, at);
        break;
      }
      case 'provider.event':
        this.providerEvent(host, bound, conditions, envelope.data, at);
        break;
      case 'host.inventory':
        this.inventory(state, host, conditions, envelope.data, at);
        break;
      default:
        break;
    }
    this.flushParser(host, bound, conditions, at);
    return this.envelopes(host, out);
  }

  /** Time passes for every host: absence, quiet periods, escalation, flapping's end. */
  tick(state: EngineState, now: number): EnvelopeOf<'alert'>[] {
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (const host of Object.values(state.hosts)) alerts.push(...this.tickHost(host, now));
    return alerts;
  }

  tickHost(host: HostState, now: number): EnvelopeOf<'alert'>[] {
    const out: Transition[] = [];
    const bound = this.bound(host);
    const conditions = new Conditions([bound.template.name], out);
    this.flushParser(host, bound, conditions, now);
    const absent = bound.rules.find((r): r is RuleOf<'absence'> => r.kind === 'absence' && r.scope === 'host');
    if (absent && host.lastSample !== undefined) {
      const silentFor = now - host.lastSample;
      const limit = absent.intervals * host.intervalMs;
      conditions.observe(host, `${absent.id}|`, absent, undefined, now, {
        breaching: silentFor > limit,
        summary: fill(absent.summary, { host: host.host, detail: `${Math.round(silentFor / 1000)} s` }),
      });
    }
    for (const [key, tracker] of Object.entries(host.trackers)) {
      conditions.tick(host, key, tracker, bound.rules.find((r) => r.id === tracker.rule), now);
    }
    return this.envelopes(host, out);
  }

  /** An operator's `gpualert alert resolve`: the way out of any latched alert. */
  resolveByOperator(state: EngineState, fingerprint: string, now: number): EnvelopeOf<'alert'>[] {
    for (const host of Object.values(state.hosts)) {
      for (const [key, tracker] of Object.entries(host.trackers)) {
        if (fingerprintOf(host.host, key) !== fingerprint || !tracker.firing) continue;
        const out: Transition[] = [];
        new Conditions([host.template], out).resolve(host, key, tracker, now);
        return this.envelopes(host, out);
      }
    }
    return [];
  }

  private host(state: EngineState, name: string, labels: Record<string, string>): HostState {
    let host = state.hosts[name];
    if (!host) {
      host = newHostState(name, labels, bindTemplate(this.ruleSet, {}, labels).template.name);
      state.hosts[name] = host;
    } else if (Object.keys(labels).length > 0) {
      host.labels = labels;
    }
    return host;
  }

  private bound(host: HostState): BoundTemplate {
    return this.byName.get(host.template) ?? this.ruleSet.templates[this.ruleSet.templates.length - 1]!;
  }

  private parser(host: HostState): KernelLogParser {
    let parser = this.parsers.get(host.host);
    if (!parser) {
      parser = new KernelLogParser({ catalog: this.catalog, gpuIndexByPci: new Map(Object.entries(host.inventory?.buses ?? {})) });
      this.parsers.set(host.host, parser);
    }
    return parser;
  }

  private flushParser(host: HostState, bound: BoundTemplate, conditions: Conditions, at: number): void {
    const parser = this.parsers.get(host.host);
    if (!parser) return;
    for (const event of parser.tick(at)) {
      this.kernelEvent(host, bound, conditions, stableId(host.host, 'kernel.line', event.position, event.ts), event.data, Date.parse(event.ts));
    }
  }

  private sample(state: EngineState, host: HostState, bound: BoundTemplate, conditions: Conditions, envelope: EnvelopeOf<'gpu.sample'>, at: number): void {
    if (host.lastSample !== undefined && at > host.lastSample) {
      host.intervalMs = Math.round(host.intervalMs * 0.8 + Math.min(600_000, at - host.lastSample) * 0.2);
    }
    host.lastSample = Math.max(host.lastSample ?? at, at);
    const { gpus, error } = envelope.data;
    const evidence = [envelope.id];

    for (const rule of bound.rules) {
      if (rule.kind === 'collector') {
        const failing = error !== undefined && !(error.code === 'gpu_lost' && error.pci_bus);
        host.collectorErrors = failing ? host.collectorErrors + 1 : 0;
        if (host.collectorErrors === 0 && !host.trackers[`${rule.id}|`]) continue;
        conditions.observe(host, `${rule.id}|`, rule, undefined, at, {
          breaching: host.collectorErrors >= rule.consecutive,
          severity: error?.code === 'gpu_lost' ? 'critical' : rule.severity,
          summary: fill(rule.summary, { host: host.host, detail: error?.message ?? '' }),
          evidence,
        });
      }
    }

    const present = new Set<number>();
    // A big sample's peer medians are made once per rule for all its GPUs (n log n), not per GPU (n²).
    const peers = new SamplePeers(gpus);
    for (let position = 0; position < gpus.length; position += 1) {
      const gpu = gpus[position]!;
      present.add(gpu.index);
      // Samples name each GPU's bus too: kernel events map to GPUs even before an inventory.
      if (gpu.pci_bus !== null && host.buses?.[gpu.pci_bus] !== gpu.index) {
        (host.buses ??= dict())[gpu.pci_bus] = gpu.index;
        forgetBusIndex(host.buses);
      }
      const gs = (host.gpus[gpu.index] ??= newGpuState());
      gs.lastSeen = at;
      gs.missing = 0;
      this.gpuRules(host, bound, conditions, gpu, position, peers, gs, at, evidence);
    }

    // GPUs the host should have but did not report.
    const lost = error?.code === 'gpu_lost' && error.pci_bus ? host.inventory?.buses[error.pci_bus] : undefined;
    const known = host.inventory?.indexes ?? Object.keys(host.gpus).map(Number);
    const absent = bound.rules.find((r): r is RuleOf<'absence'> => r.kind === 'absence' && r.scope === 'gpu');
    if (absent && (gpus.length > 0 || lost !== undefined)) {
      for (const index of known) {
        const gs = (host.gpus[index] ??= newGpuState());
        if (present.has(index) && index !== lost) {
          this.lostGpu(host, absent, conditions, index, at, false, '', evidence);
          continue;
        }
        gs.missing += 1;
        const breaching = index === lost || gs.missing >= absent.intervals;
        const detail = index === lost ? `nvidia-smi: ${error?.message ?? ''}` : `missing from the last ${gs.missing} samples`;
        if (breaching) this.lostGpu(host, absent, conditions, index, at, true, detail, evidence);
      }
    }

    // Host-level: idle cost on a paid instance; the job straggler.
    const processes = gpus.reduce((n, g) => n + (g.processes ?? 0), 0);
    const meanUtil = gpus.length > 0 ? gpus.reduce((n, g) => n + (g.util_pct ?? 0), 0) / gpus.length : 0;
    for (const rule of bound.rules) {
      if (rule.kind === 'idle_cost') {
        const paid = host.inventory?.provider !== undefined;
        const idle = gpus.length > 0 && processes === 0 && gpus.every((g) => g.util_pct !== null && g.util_pct < rule.util_below);
        if (!(paid && idle) && !host.trackers[`${rule.id}|`]) continue;
        conditions.observe(host, `${rule.id}|`, rule, undefined, at, { breaching: paid && idle, summary: fill(rule.summary, { host: host.host }), evidence });
      } else if (rule.kind === 'straggler') {
        // Only a host running the job can slow it down; an idle one is not a straggler.
        if (processes > 0 || host.trackers[`${rule.id}|`]) this.straggler(state, host, rule, conditions, processes > 0 ? meanUtil : 100, gpus.length, at, evidence);
      }
    }
  }

  private lostGpu(host: HostState, rule: RuleOf<'absence'>, conditions: Conditions, index: number, at: number, breaching: boolean, detail: string, evidence: string[]): void {
    const key = lostKey(index, busOf(host, index));
    const tracker = host.trackers[key];
    if (!breaching && !tracker) return; // present, and never lost: nothing to format or record
    // A lost GPU stays lost until it reports again after a reset or reboot (a sample with it).
    if (!breaching && tracker?.firing && tracker.latched) {
      if (host.inventory && host.inventory.at > (tracker.startsAt ?? 0)) conditions.resolve(host, key, tracker, at);
      return;
    }
    conditions.observe(host, key, rule, index, at, {
      breaching, summary: fill(rule.summary, { host: host.host, gpu: index, detail }), evidence: [...evidence, ...this.recent(host, index, at)],
    }, true);
  }

  private gpuRules(
    host: HostState, bound: BoundTemplate, conditions: Conditions, gpu: GpuMetrics, position: number, samplePeers: SamplePeers,
    gs: GpuState, at: number, evidence: string[],
  ): void {
    const index = gpu.index;
    const values = { host: host.host, gpu: index };
    for (const rule of bound.rules) {
      const key = ruleKey(rule.id, index);
      switch (rule.kind) {
        case 'threshold': {
          const value = gpu[rule.metric];
          const firing = host.trackers[key]?.firing === true;
          const limit = firing ? (rule.recover_below ?? rule.above) : rule.above;
          const breaching = value !== null && value > limit;
          if (!breaching && !host.trackers[key]) break; // healthy and untracked: the common case costs nothing
          this.observeMetric(host, conditions, key, rule, index, at, breaching, value, () => fill(rule.summary, { ...values, value: value ?? undefined }), evidence);
          break;
        }
        case 'baseline': {
          const value = gpu[rule.metric];
          const util = gpu.util_pct;
          if (value === null || util === null || (util >= IDLE_UTIL && util < BUSY_UTIL)) break;
          const bucket = util < IDLE_UTIL ? 'idle' : 'busy';
          const prior = bound.template.priors[rule.metric]?.[bucket];
          const learned = (gs.baselines[baselineKey(rule.metric, bucket)] ??= { n: 0, mean: prior?.[0] ?? value, dev: prior?.[1] ?? 1 });
          const weight = Math.min(1, learned.n / rule.warmup_samples);
          const mean = weight * learned.mean + (1 - weight) * (prior?.[0] ?? learned.mean);
          const dev = Math.max(weight * learned.dev + (1 - weight) * (prior?.[1] ?? learned.dev), rule.min_delta / rule.sigmas / 2);
          const delta = value - mean;
          const breaching = delta / dev > rule.sigmas && delta > rule.min_delta;
          if (breaching || host.trackers[key]) {
            this.observeMetric(host, conditions, key, rule, index, at, breaching, value, () => fill(rule.summary, { ...values, value, baseline: mean, delta }), evidence);
          }
          // Learn only from normal samples, so a fault is not taken for the new normal.
          if (!breaching && !host.trackers[key]?.firing) learn(learned, value);
          break;
        }
        case 'peer': {
          const value = gpu[rule.metric];
          const util = gpu.util_pct;
          if (value === null || util === null) break;
          const peers = samplePeers.of(rule, position);
          if (Number.isNaN(peers)) break; // fewer than two siblings at its load
          const firing = host.trackers[key]?.firing === true;
          const delta = value - peers;
          const breaching = delta > (firing ? rule.min_delta - 3 : rule.min_delta);
          if (!breaching && !host.trackers[key]) break;
          this.observeMetric(host, conditions, key, rule, index, at, breaching, value, () => fill(rule.summary, { ...values, value, peers, delta }), evidence);
          break;
        }
        case 'counter': {
          const value = gpu[rule.metric];
          if (value === null) break;
          const last = gs.counters[rule.metric];
          gs.counters[rule.metric] = value;
          const delta = last === undefined ? 0 : value - last;
          if (delta >= rule.increase) {
            conditions.observe(host, key, rule, index, at, { breaching: true, value, summary: fill(rule.summary, { ...values, value, delta }), evidence: [...evidence, ...this.recent(host, index, at)] }, rule.latch);
            const tracker = host.trackers[key];
            if (tracker && !rule.latch) tracker.quietMs = rule.quiet;
          }
          break;
        }
        case 'flag': {
          const value = gpu[rule.flag];
          if (value === null) break;
          const tracker = host.trackers[key];
          if (!value && (!tracker || tracker.latched)) break; // nothing to say, or latched until recovery after a reset
          conditions.observe(host, key, rule, index, at, { breaching: value, summary: fill(rule.summary, values), evidence }, rule.latch);
          break;
        }
        case 'throttle': {
          const breaching = gpu.throttle !== null && gpu.throttle.some((r) => rule.reasons.includes(r));
          if (!breaching && !host.trackers[key]) break;
          const active = (gpu.throttle ?? []).filter((r) => rule.reasons.includes(r));
          this.observeMetric(host, conditions, key, rule, index, at, breaching, undefined, () => fill(rule.summary, { ...values, detail: active.join(', ') }), evidence);
          break;
        }
        case 'stuck_job': {
          const breaching = (gpu.processes ?? 0) > 0 && gpu.util_pct !== null && gpu.util_pct < rule.util_below;
          if (!breaching && !host.trackers[key]) break;
          this.observeMetric(host, conditions, key, rule, index, at, breaching, gpu.util_pct ?? undefined, () => fill(rule.summary, values), evidence);
          break;
        }
        case 'low_memory_use': {
          const used = gpu.mem_used_mib !== null && gpu.mem_total_mib ? (gpu.mem_used_mib / gpu.mem_total_mib) * 100 : null;
          const breaching = (gpu.processes ?? 0) > 0 && used !== null && used < rule.mem_below_pct && (gpu.util_pct ?? 0) >= 5;
          if (!breaching && !host.trackers[key]) break;
          this.observeMetric(host, conditions, key, rule, index, at, breaching, used ?? undefined, () => fill(rule.summary, { ...values, value: used ?? undefined }), evidence);
          break;
        }
        case 'link': {
          const util = gpu.util_pct;
          const genLow = gpu.pcie_gen !== null && gpu.pcie_gen_max !== null && gpu.pcie_gen < gpu.pcie_gen_max;
          const widthLow = gpu.pcie_width !== null && gpu.pcie_width_max !== null && gpu.pcie_width < gpu.pcie_width_max;
          // Links downtrain at idle to save power: only a link degraded under load is a fault.
          const underLoad = util !== null && util >= rule.util_above;
          if (!underLoad && !host.trackers[key]?.firing) break;
          if (!underLoad) break; // keep a firing link alert until it is seen healthy under load
          const detail = () => `Gen${gpu.pcie_gen ?? '?'} x${gpu.pcie_width ?? '?'} of Gen${gpu.pcie_gen_max ?? '?'} x${gpu.pcie_width_max ?? '?'}`;
          this.observeMetric(host, conditions, key, rule, index, at, genLow || widthLow, gpu.pcie_width ?? undefined, () => fill(rule.summary, { ...values, detail: detail() }), evidence);
          break;
        }
        default:
          break;
      }
    }
  }

  private observeMetric(
    host: HostState, conditions: Conditions, key: string, rule: RuleSpec, gpu: number, at: number, breaching: boolean,
    value: number | null | undefined, summary: () => string, evidence: string[],
  ): void {
    // The common case, healthy and nothing tracked, costs no allocation and no formatting.
    if (!breaching && !host.trackers[key]) return;
    conditions.observe(host, key, rule, gpu, at, {
      breaching, value: value ?? undefined, summary: summary(), evidence: breaching ? [...evidence, ...this.recent(host, gpu, at)] : [],
    });
  }

  private straggler(state: EngineState, host: HostState, rule: RuleOf<'straggler'>, conditions: Conditions, util: number, gpuCount: number, at: number, evidence: string[]): void {
    const job = host.labels.job;
    if (!job || gpuCount === 0) return;
    const hosts = (state.fleet.jobs[job] ??= dict());
    const mine = hosts[host.host];
    hosts[host.host] = { util: mine ? mine.util * 0.7 + util * 0.3 : util, at };
    const others = Object.entries(hosts).filter(([name, h]) => name !== host.host && at - h.at < 120_000).map(([, h]) => h.util);
    if (others.length + 1 < rule.min_hosts) return;
    const peers = median(others);
    const own = hosts[host.host]!.util;
    const breaching = peers > 30 && own < rule.fraction * peers;
    if (!breaching && !host.trackers[`${rule.id}|`]) return;
    conditions.observe(host, `${rule.id}|`, rule, undefined, at, {
      breaching, value: own, summary: fill(rule.summary, { host: host.host, value: own, peers, detail: job }), evidence,
    });
  }

  private recent(host: HostState, gpu: number, at: number): string[] {
    const gs = host.gpus[gpu];
    return gs ? gs.recent.filter(([, t]) => at - t <= EVIDENCE_WINDOW_MS).map(([id]) => id) : [];
  }

  private kernelEvent(host: HostState, bound: BoundTemplate, conditions: Conditions, id: string, event: KernelEventData, at: number): void {
    const gpu = event.gpu ?? (event.pci_bus ? host.inventory?.buses[event.pci_bus] ?? host.buses?.[event.pci_bus] : undefined);
    if (gpu !== undefined) {
      const gs = (host.gpus[gpu] ??= newGpuState());
      gs.recent.push([id, at]);
      gs.recent = gs.recent.filter(([, t]) => at - t <= EVIDENCE_WINDOW_MS).slice(-10);
      // A kernel event near a firing metric alert on the same GPU is its evidence.
      for (const tracker of Object.values(host.trackers)) {
        if (tracker.firing && tracker.gpu === gpu && !tracker.evidence.includes(id)) tracker.evidence.push(id);
      }
    }
    if (event.severity === 'info') return; // recorded on the topic for the timeline; nothing to page about
    const rule = bound.rules.find((r): r is RuleOf<'event'> => r.kind === 'event' && r.kinds.includes(event.kind) && (!r.xids || (event.xid !== undefined && r.xids.includes(event.xid))));
    if (!rule) return;
    const lost = (event.kind === 'xid' && event.xid === 79) || event.kind === 'fallen_off_bus';
    const where = gpu !== undefined ? String(gpu) : event.pci_bus ?? '';
    if (lost && (gpu !== undefined || event.pci_bus !== undefined)) {
      const absent = bound.rules.find((r): r is RuleOf<'absence'> => r.kind === 'absence' && r.scope === 'gpu');
      if (absent) {
        const entry = event.xid !== undefined ? this.catalog.lookup(event.xid) : undefined;
        // Keyed by the bus, so the Xid and the GPU missing from samples are one alert in any order.
        conditions.observe(host, lostKey(gpu ?? -1, event.pci_bus), absent, gpu, at, {
          breaching: true, severity: 'critical', evidence: [id],
          summary: fill(absent.summary, { host: host.host, gpu: gpu ?? event.pci_bus, detail: event.xid !== undefined ? `Xid ${event.xid}: ${entry?.meaning ?? ''}` : 'fallen off the bus' }),
          description: event.message,
        }, true);
        return;
      }
    }
    let severity: Severity = event.severity;
    let note = '';
    const key = `${rule.id}|${event.kind}|${where}|${event.xid ?? ''}`;
    if (rule.repeat && event.xid !== undefined && gpu !== undefined) {
      const gs = host.gpus[gpu]!;
      const times = (gs.xids[event.xid] ?? []).filter((t) => at - t <= rule.repeat!.within);
      times.push(at); // one burst is one occurrence, however many lines it printed
      gs.xids[event.xid] = times.slice(-20);
      forgetStaleXids(gs.xids);
      if (times.length >= rule.repeat.count && severityRank(severity) < severityRank(rule.repeat.severity)) {
        severity = rule.repeat.severity;
        note = ` — ${times.length} times on this GPU within ${Math.round(rule.repeat.within / 60_000)} min: suspect the hardware`;
      }
    }
    const entry = event.kind === 'xid' && event.xid !== undefined ? this.catalog.lookup(event.xid) : undefined;
    const hardware = severity === 'critical' || (entry !== undefined && HARDWARE_CAUSES.has(entry.cause) && severity !== 'warning');
    const what = event.kind === 'xid' ? `Xid ${event.xid}: ${event.meaning ?? ''}` : event.kind === 'sxid' ? `SXid ${event.xid}: ${event.meaning ?? ''}` : event.meaning ?? event.kind;
    const detail = `${what}${gpu !== undefined ? ` on GPU ${gpu}` : event.pci_bus ? ` at ${event.pci_bus}` : ''}${(event.count ?? 1) > 1 ? ` (×${event.count})` : ''}${note}`;
    const category = event.kind === 'xid' && entry ? xidCategory(entry.cause) : EVENT_CATEGORY[event.kind];
    conditions.observe(host, key, { ...rule, category, action: event.action ?? rule.action }, gpu, at, {
      breaching: true, severity, summary: fill(rule.summary, { host: host.host, detail }), description: event.message, evidence: [id],
    }, hardware);
    const tracker = host.trackers[key];
    if (tracker && !hardware) tracker.quietMs = rule.quiet;
  }

  private providerEvent(host: HostState, bound: BoundTemplate, conditions: Conditions, data: EnvelopeOf<'provider.event'>['data'], at: number): void {
    const window = {
      status: data.status,
      description: `${data.provider} ${data.kind} ${data.status}: ${data.description}${data.window_start ? ` (window ${data.window_start}${data.window_end ? ` – ${data.window_end}` : ''})` : ''}`,
      ...(data.window_start ? { start: Date.parse(data.window_start) } : {}),
      ...(data.window_end ? { end: Date.parse(data.window_end) } : {}),
    };
    host.maintenance[data.event_id] = window;
    const forgotten = forgetOldWindows(host.maintenance, data.event_id);
    const rule = bound.rules.find((r): r is RuleOf<'maintenance'> => r.kind === 'maintenance');
    if (!rule) return;
    for (const id of forgotten) {
      // A window no longer kept ends its alert too: resolved once, not left firing with nothing to end it.
      const key = `${rule.id}|${id}`;
      const old = host.trackers[key];
      if (old?.firing) conditions.resolve(host, key, old, at);
      delete host.trackers[key];
    }
    const open = data.status === 'scheduled' || data.status === 'started';
    const key = `${rule.id}|${data.event_id}`;
    const summary = fill(rule.summary, { host: host.host, detail: `${host.host}: ${window.description}` });
    const tracker = host.trackers[key];
    if (tracker) tracker.summary = summary; // the resolve says how it ended
    conditions.observe(host, key, rule, undefined, at, { breaching: open, summary });
  }

  private inventory(state: EngineState, host: HostState, conditions: Conditions, data: EnvelopeOf<'host.inventory'>['data'], at: number): void {
    host.inventory = {
      gpu_model: data.gpu_model, driver: data.driver_version, cuda: data.cuda_version, buses: dict(), indexes: data.gpus.map((g) => g.index), at,
      ...(data.provider ? { provider: data.provider } : {}),
    };
    for (const gpu of data.gpus) host.inventory.buses[gpu.pci_bus] = gpu.index;
    this.parsers.delete(host.host); // re-made with the new PCI map
    const bound = bindTemplate(this.ruleSet, { gpu_model: data.gpu_model, provider: data.provider }, host.labels);
    host.template = bound.template.name;
    const drift = bound.rules.find((r): r is RuleOf<'drift'> => r.kind === 'drift');
    if (!drift) return;
    const reasons: string[] = [];
    const pins = bound.template.pins;
    if (pins.driver_version && pins.driver_version !== data.driver_version) reasons.push(`driver ${data.driver_version}, pinned ${pins.driver_version}`);
    if (pins.cuda_version && pins.cuda_version !== data.cuda_version) reasons.push(`CUDA ${data.cuda_version}, pinned ${pins.cuda_version}`);
    const cluster = host.labels.cluster;
    if (cluster) {
      const members = (state.fleet.clusters[cluster] ??= dict());
      members[host.host] = { driver: data.driver_version, cuda: data.cuda_version };
      const drivers = Object.values(members).map((m) => m.driver);
      const majority = mostCommon(drivers);
      if (drivers.length >= drift.min_hosts && majority && majority.count > drivers.length / 2 && majority.value !== data.driver_version) {
        reasons.push(`driver ${data.driver_version} while ${majority.count} of ${drivers.length} hosts in ${cluster} run ${majority.value}`);
      }
    }
    conditions.observe(host, `${drift.id}|`, drift, undefined, at, { breaching: reasons.length > 0, summary: fill(drift.summary, { host: host.host, detail: reasons.join('; ') }) });
    // A fresh inventory after a reboot is the start of recovery for latched GPU faults.
  }

  private envelopes(host: HostState, out: readonly Transition[]): EnvelopeOf<'alert'>[] {
    return out.map((t) =>
      newEnvelope({
        type: 'alert', id: stableId(t.data.fingerprint, t.data.status, t.data.severity, t.ts), host: host.host, source: ENGINE_SOURCE,
        ts: new Date(t.ts).toISOString(), labels: host.labels, data: t.data,
      }),
    );
  }
}

/**
 * Maintenance windows one host keeps: a provider announces a few a month, and each is looked at
 * for every alert, so a stream of made-up event ids must not grow the state (and each alert's cost) without end.
 */
export const MAX_MAINTENANCE_WINDOWS_PER_HOST = 32;

/** Past the bound, closed windows go first (oldest first), then the oldest open ones; never `keep`. The ids forgotten. */
function forgetOldWindows(windows: Record<string, { status: string }>, keep: string): string[] {
  const ids = Object.keys(windows);
  let excess = ids.length - MAX_MAINTENANCE_WINDOWS_PER_HOST;
  const forgotten: string[] = [];
  const forget = (id: string) => {
    delete windows[id];
    forgotten.push(id);
    excess -= 1;
  };
  for (const id of ids) {
    if (excess <= 0) break;
    if (id !== keep && (windows[id]!.status === 'completed' || windows[id]!.status === 'cancelled')) forget(id);
  }
  for (const id of ids) {
    if (excess <= 0) break;
    if (id !== keep && id in windows) forget(id);
  }
  return forgotten;
}

/** Xid codes whose recent times one GPU keeps: a failing GPU shows a handful; made-up codes must not grow it. */
export const MAX_XID_CODES_PER_GPU = 32;

/** Past the bound, the code seen least recently goes. */
function forgetStaleXids(xids: Record<string, number[]>): void {
  const codes = Object.keys(xids);
  if (codes.length <= MAX_XID_CODES_PER_GPU) return;
  let stalest = codes[0]!;
  for (const code of codes) if ((xids[code]!.at(-1) ?? 0) < (xids[stalest]!.at(-1) ?? 0)) stalest = code;
  delete xids[stalest];
}

function lostKey(gpu: number, bus: string | undefined): string {
  return `gpu-absent|${bus ?? gpu}`;
}

/** A GPU's PCI address, from the inventory or, before one arrives, from its samples. */
function busOf(host: HostState, index: number): string | undefined {
  return busByIndex(host.inventory?.buses, index) ?? busByIndex(host.buses, index);
}

/** `rule|gpu`, the tracker key of a per-GPU rule: made once per rule and GPU, not per sample. */
function ruleKey(rule: string, gpu: number): string {
  let keys = RULE_KEYS.get(rule);
  if (!keys) RULE_KEYS.set(rule, (keys = []));
  return (keys[gpu] ??= `${rule}|${gpu}`);
}

const RULE_KEYS = new Map<string, string[]>();

/** `metric:idle` or `metric:busy`, the key of a learned baseline, made once. */
function baselineKey(metric: string, bucket: 'idle' | 'busy'): string {
  let keys = BASELINE_KEYS.get(metric);
  if (!keys) BASELINE_KEYS.set(metric, (keys = { idle: `${metric}:idle`, busy: `${metric}:busy` }));
  return keys[bucket];
}

const BASELINE_KEYS = new Map<string, { idle: string; busy: string }>();

function xidCategory(cause: string): AlertData['category'] {
  return cause === 'memory' ? 'ecc' : cause === 'nvlink' ? 'nvlink' : cause === 'pcie' ? 'pcie' : cause === 'thermal' ? 'thermal' : 'xid';
}


function learn(b: Baseline, value: number): void {
  b.n += 1;
  // Fast while young, then slow: a GPU's normal changes over hours, not minutes.
  const alpha = Math.max(1 / b.n, 0.01);
  const deviation = Math.min(Math.abs(value - b.mean), 4 * Math.max(b.dev, 0.5));
  b.mean += alpha * (Math.sign(value - b.mean) * Math.min(Math.abs(value - b.mean), 4 * Math.max(b.dev, 0.5)));
  b.dev += alpha * (deviation - b.dev);
}

function mostCommon(values: readonly string[]): { value: string; count: number } | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: { value: string; count: number } | undefined;
  for (const [value, count] of counts) if (!best || count > best.count || (count === best.count && value < best.value)) best = { value, count };
  return best;
}
