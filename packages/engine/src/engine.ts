import { KernelLogParser, PciTopology } from '@gpualert/kernel-log';
import { ADAPTERS } from '@gpualert/providers';
import type { XidCatalog } from '@gpualert/rules';
import { must, stableId, type Envelope, type EnvelopeOf, type KernelEventData } from '@gpualert/schema';
import { alertEnvelopes } from './alert-envelopes.ts';
import { forgetBusIndex } from './bus-by-index.ts';
import { Conditions, fingerprintOf, type Transition } from './conditions.ts';
import { dict, newGpuState, newHostState, type EngineState, type HostState } from './engine-state.ts';
import { noteKernelEvidence } from './evidence.ts';
import { noteGpuJob, noteJobEvent } from './job-runs.ts';
import type { GpuContext, JudgeContext, SampleContext } from './judge.ts';
import { planOf } from './judging-plan.ts';
import { bindTemplate, fallbackTemplate, type BoundTemplate, type RuleSet } from './load-rules.ts';
import { clusterMajority, deleteClusterMember } from './cluster-members.ts';
import { keepWindow } from './maintenance-windows.ts';
import { SamplePeers } from './peer-medians.ts';
import { towardGpus } from './pci-paths.ts';

export { ENGINE_SOURCE } from './alert-envelopes.ts';
export { MAX_MAINTENANCE_WINDOWS_PER_HOST } from './maintenance-windows.ts';
export { MAX_XID_CODES_PER_GPU } from './judges/event.ts';

/** How often, in a host's own sample time, its clock ticks as its samples arrive. */
export const HOST_TICK_MS = 10_000;

/**
 * The judging core: `step` one envelope, `tick` the clock. Deterministic (event time is the
 * clock, nothing else is read); it updates the state it is given in place, for speed, and
 * returns the alert envelopes the step produced. What each rule kind does is its judge's
 * (`judges/<kind>.ts`); the engine keeps the state, the dispatch and the clock.
 */
export class Engine {
  /** Each host's kernel parser, made from (and kept in step with) `HostState.kernel`: a cache, not state. */
  private parsers = new WeakMap<HostState, KernelLogParser>();
  private byName: Map<string, BoundTemplate>;
  /** Per template, where its transitions collect during one step: made once, emptied each step. */
  private readonly sinks = new Map<BoundTemplate, { conditions: Conditions; out: Transition[] }>();
  /** Clusters whose membership an inventory changed, until the service takes them (`takeChangedClusters`). */
  private readonly changedClusters = new Set<string>();
  /** The GPU indexes of the sample being judged (reused: the engine judges one envelope at a time). */
  private readonly present = new Set<number>();

  /**
   * `parseRaw`: judge `kernel.line` and `provider.raw` envelopes by parsing them (recordings);
   * the live service leaves them, since the collectors and the intake publish the parsed form.
   */
  constructor(
    private ruleSet: RuleSet,
    private catalog: XidCatalog,
    private readonly parseRaw = true,
  ) {
    this.byName = new Map(ruleSet.templates.map((t) => [t.template.name, t]));
  }

  /**
   * Judges by these rules and this catalog from the next envelope on (SIGHUP): every host is bound
   * again by its fingerprint (a template's selector may have changed), its baselines, trackers and
   * open alerts kept; the kernel parsers are made again from the lines they had pending, with the
   * new catalog. Synchronous, so no envelope is judged half by the old rules. An alert of a rule
   * that is gone stays open until an operator resolves it (`gpualert alert resolve`). Returns the
   * hosts whose template changed.
   */
  reload(state: EngineState, ruleSet: RuleSet, catalog: XidCatalog): number {
    this.ruleSet = ruleSet;
    this.catalog = catalog;
    this.byName = new Map(ruleSet.templates.map((t) => [t.template.name, t]));
    this.sinks.clear();
    this.parsers = new WeakMap();
    let moved = 0;
    for (const host of Object.values(state.hosts)) {
      const inventory = host.inventory;
      const bound = bindTemplate(ruleSet, inventory ? { gpu_model: inventory.gpu_model, provider: inventory.provider } : {}, host.labels);
      if (bound.template.name !== host.template) moved += 1;
      host.template = bound.template.name;
    }
    return moved;
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
    const due = envelope.type === 'gpu.sample' && host !== undefined && at - host.lastTick >= HOST_TICK_MS;
    const alerts = due ? this.tickHost(state, host, at) : [];
    if (due) host.lastTick = at;
    alerts.push(...this.judge(state, envelope, at));
    const fresh = must(state.hosts[envelope.host], 'judging an envelope makes its host');
    if (fresh.lastTick === 0) fresh.lastTick = at;
    return alerts;
  }

  /** One envelope judged, without the host's clock ticking first (`advance` does both). */
  step(state: EngineState, envelope: Envelope): EnvelopeOf<'alert'>[] {
    return this.judge(state, envelope, Date.parse(envelope.ts));
  }

  private judge(state: EngineState, envelope: Envelope, at: number): EnvelopeOf<'alert'>[] {
    const host = this.host(state, envelope.host, envelope.labels);
    const bound = this.bound(host);
    const { conditions, out } = this.sink(bound);
    const ctx: JudgeContext = { state, host, bound, conditions, catalog: this.catalog, at };
    switch (envelope.type) {
      case 'gpu.sample':
        this.sample(ctx, envelope);
        break;
      case 'kernel.event':
        this.kernelEvent(ctx, envelope.id, envelope.data, at);
        break;
      case 'kernel.line':
        if (!this.parseRaw) break;
        // Raw lines in a recording are parsed as the collector would, then judged.
        for (const event of this.pushKernelLine(host, envelope.data.line, at)) {
          this.kernelEvent(ctx, stableId(envelope.id, event.position), event.data, Date.parse(event.ts));
        }
        break;
      case 'provider.raw': {
        if (!this.parseRaw) break;
        const result = ADAPTERS[envelope.data.provider](envelope.data.payload, { host: envelope.host, receivedAt: envelope.ts });
        if (result.ok) for (const data of result.events) this.providerEvent(ctx, data);
        break;
      }
      case 'provider.event':
        this.providerEvent(ctx, envelope.data);
        break;
      case 'host.inventory':
        this.inventory(ctx, envelope.data);
        break;
      case 'host.sample': {
        const hostCtx = { ...ctx, id: envelope.id, data: envelope.data };
        for (const step of planOf(ctx.bound).hostSample) step.run(hostCtx, step.rule);
        break;
      }
      case 'bmc.event': {
        const bmcCtx = { ...ctx, id: envelope.id, data: envelope.data };
        for (const step of planOf(ctx.bound).bmcEvent) step.run(bmcCtx, step.rule);
        break;
      }
      case 'telemetry.health': {
        const telemetryCtx = { ...ctx, id: envelope.id, data: envelope.data };
        for (const step of planOf(ctx.bound).telemetry) step.run(telemetryCtx, step.rule);
        break;
      }
      case 'job.event': {
        const run = noteJobEvent(ctx.state, host, envelope.data, at);
        const jobCtx = { ...ctx, id: envelope.id, data: envelope.data, run };
        for (const step of planOf(ctx.bound).job) step.run(jobCtx, step.rule);
        break;
      }
      case 'alert':
      case 'notification':
      case 'acknowledgement':
      case 'usage.rollup':
      case 'action':
      case 'action.approval':
      case 'action.result':
        break; // the engine's, the notifier's and the remediator's own output, and what other layers judge (not yet wired here)
    }
    this.flushParser(ctx);
    return this.drain(host, out);
  }

  /** Time passes for every host: absence, quiet periods, escalation, flapping's end. */
  tick(state: EngineState, now: number): EnvelopeOf<'alert'>[] {
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (const host of Object.values(state.hosts)) alerts.push(...this.tickHost(state, host, now));
    return alerts;
  }

  tickHost(state: EngineState, host: HostState, now: number): EnvelopeOf<'alert'>[] {
    const bound = this.bound(host);
    const { conditions, out } = this.sink(bound);
    const ctx: JudgeContext = { state, host, bound, conditions, catalog: this.catalog, at: now };
    this.flushParser(ctx);
    for (const step of planOf(bound).tick) step.run(ctx, step.rule);
    for (const key in host.trackers) {
      const tracker = host.trackers[key];
      if (tracker === undefined) continue;
      conditions.tick(
        host,
        key,
        tracker,
        bound.rules.find((r) => r.id === tracker.rule),
        now,
      );
    }
    return this.drain(host, out);
  }

  /** One host of a changed cluster judged again, at its own latest time: the rules with a `clusterChange` hook (drift). */
  private rejudgeCluster(state: EngineState, name: string): EnvelopeOf<'alert'>[] {
    const host = state.hosts[name];
    if (!host) return [];
    const bound = this.bound(host);
    const { conditions, out } = this.sink(bound);
    const at = Math.max(host.lastTick, host.lastSample ?? 0, host.inventory?.at ?? 0);
    const ctx: JudgeContext = { state, host, bound, conditions, catalog: this.catalog, at };
    for (const step of planOf(bound).clusterChange) step.run(ctx, step.rule);
    return this.drain(host, out);
  }

  /**
   * The hosts of clusters that changed (another engine's host, or one of this state's own, joined,
   * left or changed driver: `takeChangedClusters`) judged again from their last inventory. Only a
   * host whose verdict can change is: one off its cluster's majority driver, or with a drift alert
   * on its way or firing; the majority is counted once a cluster, so a pass costs the clusters'
   * size, not its square. `owns`: the hosts this engine judges; `beforeEach` is told of each host
   * about to be judged again (the service keeps it, to undo).
   */
  rejudgeClusters(
    state: EngineState,
    clusters: Iterable<string>,
    owns: (host: string) => boolean = () => true,
    beforeEach?: (host: HostState) => void,
  ): EnvelopeOf<'alert'>[] {
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (const name of new Set(clusters)) {
      const members = state.fleet.clusters[name];
      if (!members) continue;
      const majority = clusterMajority(members)?.value;
      for (const member in members) {
        const host = owns(member) ? state.hosts[member] : undefined;
        if (!host || host.labels.cluster !== name) continue;
        if (!hasDriftTracker(host) && (host.inventory === undefined || host.inventory.driver === majority)) continue;
        beforeEach?.(host);
        alerts.push(...this.rejudgeCluster(state, member));
      }
    }
    return alerts;
  }

  /** An operator's `gpualert alert resolve`: the way out of any latched alert. */
  resolveByOperator(state: EngineState, fingerprint: string, now: number): EnvelopeOf<'alert'>[] {
    for (const host of Object.values(state.hosts)) {
      for (const [key, tracker] of Object.entries(host.trackers)) {
        if (fingerprintOf(host.host, key) !== fingerprint || !tracker.firing) continue;
        const out: Transition[] = [];
        new Conditions([host.template], out).resolve(host, key, tracker, now);
        return alertEnvelopes(host, out);
      }
    }
    return [];
  }

  private host(state: EngineState, name: string, labels: Record<string, string>): HostState {
    let host = state.hosts[name];
    if (!host) {
      host = newHostState(name, labels, bindTemplate(this.ruleSet, {}, labels).template.name);
      state.hosts[name] = host;
    } else if (hasKeys(labels)) {
      const was = host.labels.cluster;
      host.labels = labels;
      if (was !== undefined && was !== labels.cluster) this.leaveCluster(state, name, was);
    }
    return host;
  }

  /** A host relabelled out of a cluster no longer counts in its majority; the cluster's hosts are judged again. */
  private leaveCluster(state: EngineState, host: string, cluster: string): void {
    const members = state.fleet.clusters[cluster];
    if (!members || !Object.hasOwn(members, host)) return;
    deleteClusterMember(members, host);
    if (!hasKeys(members)) delete state.fleet.clusters[cluster];
    this.changedClusters.add(cluster);
  }

  private sink(bound: BoundTemplate): { conditions: Conditions; out: Transition[] } {
    let sink = this.sinks.get(bound);
    if (!sink) {
      const out: Transition[] = [];
      this.sinks.set(bound, (sink = { conditions: new Conditions([bound.template.name], out), out }));
    }
    sink.out.length = 0; // what a step that threw left behind is not told
    return sink;
  }

  private drain(host: HostState, out: Transition[]): EnvelopeOf<'alert'>[] {
    if (out.length === 0) return [];
    const alerts = alertEnvelopes(host, out);
    out.length = 0;
    return alerts;
  }

  private bound(host: HostState): BoundTemplate {
    const named = this.byName.get(host.template);
    if (named) return named;
    // A template the rules no longer have (a reload removed or renamed it, and this host's state
    // was saved before, or by an engine that had not reloaded): bound again by its fingerprint.
    const inventory = host.inventory;
    const bound = bindTemplate(this.ruleSet, inventory ? { gpu_model: inventory.gpu_model, provider: inventory.provider } : {}, host.labels);
    host.template = bound.template.name;
    return this.byName.get(bound.template.name) ?? fallbackTemplate(this.ruleSet);
  }

  /** The host's parser; after a restart (or an inventory), made again from the lines it had not yet emitted. */
  private parser(host: HostState): KernelLogParser {
    let parser = this.parsers.get(host);
    if (!parser) {
      parser = new KernelLogParser({
        catalog: this.catalog,
        gpuIndexByPci: new Map(Object.entries(host.inventory?.buses ?? {})),
        // The host's PCI tree from its inventory: a port's AER error names the GPUs below it.
        ...(host.pci ? { topology: new PciTopology({ source: 'json', devices: host.pci }) } : {}),
      });
      // Their events closed before the state was saved were judged then: only the open ones are rebuilt.
      for (const [position, line, arrival] of host.kernel?.lines ?? []) parser.push(line, arrival, position);
      this.parsers.set(host, parser);
    }
    return parser;
  }

  /** A raw kernel line through the host's parser, its pending lines kept in the host's state. */
  private pushKernelLine(host: HostState, line: string, at: number) {
    const parser = this.parser(host);
    const kernel = (host.kernel ??= { next: 0, lines: [] });
    const position = kernel.next++;
    kernel.lines.push([position, line, at]);
    const events = parser.push(line, at, position);
    keepPending(kernel, parser);
    return events;
  }

  private flushParser(ctx: JudgeContext): void {
    const { host } = ctx;
    const { kernel } = host;
    if (!kernel || kernel.lines.length === 0) return;
    const parser = this.parser(host);
    const events = parser.tick(ctx.at);
    if (events.length === 0) return;
    keepPending(kernel, parser);
    for (const event of events) {
      this.kernelEvent(ctx, stableId(host.host, 'kernel.line', event.position, event.ts), event.data, Date.parse(event.ts));
    }
  }

  private sample(base: JudgeContext, envelope: EnvelopeOf<'gpu.sample'>): void {
    const { host, at } = base;
    if (host.lastSample !== undefined && at > host.lastSample) {
      host.intervalMs = Math.round(host.intervalMs * 0.8 + Math.min(600_000, at - host.lastSample) * 0.2);
    }
    host.lastSample = Math.max(host.lastSample ?? at, at);
    const { gpus } = envelope.data;
    const plan = planOf(base.bound);
    const present = this.present;
    present.clear();
    const ctx: SampleContext = {
      state: base.state,
      host,
      bound: base.bound,
      conditions: base.conditions,
      catalog: base.catalog,
      at,
      sample: envelope.data,
      evidence: [envelope.id],
      present,
    };
    for (const step of plan.beforeGpus) step.run(ctx, step.rule);

    // One context for all the GPUs of the sample, moved from GPU to GPU: a healthy GPU allocates nothing.
    // A big sample's peer medians are made once per rule for all its GPUs (n log n), not per GPU (n²).
    const first = gpus[0];
    if (first !== undefined) {
      const gpuCtx: GpuContext = {
        state: base.state,
        host,
        bound: base.bound,
        conditions: base.conditions,
        catalog: base.catalog,
        at,
        sample: envelope.data,
        evidence: ctx.evidence,
        present,
        gpu: first,
        position: 0,
        gs: EMPTY_GPU,
        peers: new SamplePeers(gpus),
      };
      let position = 0;
      for (const gpu of gpus) {
        present.add(gpu.index);
        // Samples name each GPU's bus too: kernel events map to GPUs even before an inventory.
        if (gpu.pci_bus !== null && host.buses?.[gpu.pci_bus] !== gpu.index) {
          (host.buses ??= dict())[gpu.pci_bus] = gpu.index;
          forgetBusIndex(host.buses);
        }
        const gs = (host.gpus[gpu.index] ??= newGpuState());
        gs.missing = 0;
        if (gpu.job !== undefined || gs.job !== undefined) noteGpuJob(base.state, gs, gpu.job);
        gpuCtx.gpu = gpu;
        gpuCtx.position = position;
        gpuCtx.gs = gs;
        for (const step of plan.gpu) step.run(gpuCtx, step.rule);
        position += 1;
      }
    }
    for (const step of plan.afterGpus) step.run(ctx, step.rule);
  }

  private kernelEvent(base: JudgeContext, id: string, event: KernelEventData, at: number): void {
    const { host } = base;
    const gpu = event.gpu ?? (event.pci_bus ? (host.inventory?.buses[event.pci_bus] ?? host.buses?.[event.pci_bus]) : undefined);
    // A kernel event near a firing metric alert on the same GPU is its evidence.
    if (gpu !== undefined) noteKernelEvidence(host, gpu, id, at);
    if (event.severity === 'info') return; // recorded on the topic for the timeline; nothing to page about
    const ctx = { ...base, at, id, event, gpu };
    for (const step of planOf(base.bound).kernel) if (step.run(ctx, step.rule)) return;
  }

  private providerEvent(base: JudgeContext, data: EnvelopeOf<'provider.event'>['data']): void {
    const { window, forgotten, moved } = keepWindow(base.host, data);
    const ctx = { ...base, data, window, forgotten, moved };
    for (const step of planOf(base.bound).provider) step.run(ctx, step.rule);
  }

  private inventory(base: JudgeContext, data: EnvelopeOf<'host.inventory'>['data']): void {
    const { host, at } = base;
    host.inventory = {
      gpu_model: data.gpu_model,
      driver: data.driver_version,
      cuda: data.cuda_version,
      buses: dict(),
      indexes: data.gpus.map((g) => g.index),
      at,
      ...(data.provider ? { provider: data.provider } : {}),
    };
    for (const gpu of data.gpus) host.inventory.buses[gpu.pci_bus] = gpu.index;
    if (data.pci_topology) host.pci = towardGpus(data.pci_topology, new Set(data.gpus.map((g) => g.pci_bus)));
    this.parsers.delete(host); // re-made with the new PCI map, from the lines still pending
    // The inventory can move the host to another template: its rules judge from here on.
    const bound = bindTemplate(this.ruleSet, { gpu_model: data.gpu_model, provider: data.provider }, host.labels);
    host.template = bound.template.name;
    const ctx = { ...base, bound, data };
    const cluster = host.labels.cluster;
    const was = cluster === undefined ? undefined : base.state.fleet.clusters[cluster]?.[host.host];
    const before = was === undefined ? undefined : `${was.driver} ${was.cuda}`;
    for (const step of planOf(bound).inventory) step.run(ctx, step.rule);
    const member = cluster === undefined ? undefined : base.state.fleet.clusters[cluster]?.[host.host];
    if (cluster !== undefined && member !== undefined && `${member.driver} ${member.cuda}` !== before) this.changedClusters.add(cluster);
  }

  /**
   * The clusters a host joined or changed versions in since the last call: their other hosts'
   * majority may have changed too, so they are judged again (`rejudgeClusters`): by the service once
   * a tick, by `replay` after each inventory.
   */
  takeChangedClusters(): string[] {
    const out = [...this.changedClusters];
    this.changedClusters.clear();
    return out;
  }
}

function hasDriftTracker(host: HostState): boolean {
  for (const key in host.trackers) if (host.trackers[key]?.category === 'drift') return true;
  return false;
}

function hasKeys(record: Readonly<Record<string, unknown>>): boolean {
  for (const _ in record) return true; // no array made per envelope, unlike Object.keys
  return false;
}

/** A placeholder until the first GPU's state is set (never written). */
const EMPTY_GPU = newGpuState();

/** Pending kernel lines one host keeps: a burst longer than this is judged from its first lines after a restart. */
export const MAX_PENDING_KERNEL_LINES = 256;

/** Drops the lines the parser has emitted in events: what is left is what a new parser must be fed again. */
function keepPending(kernel: NonNullable<HostState['kernel']>, parser: KernelLogParser): void {
  const oldest = parser.resumePosition();
  const first = kernel.lines[0];
  if (oldest === undefined) kernel.lines = [];
  else if (first !== undefined && first[0] < oldest) kernel.lines = kernel.lines.filter(([position]) => position >= oldest);
  if (kernel.lines.length > MAX_PENDING_KERNEL_LINES) kernel.lines = kernel.lines.slice(-MAX_PENDING_KERNEL_LINES);
}
