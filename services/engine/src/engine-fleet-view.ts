import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { fleetHostView, gpuHistoryView, GpuHistoryRing, type EngineState, type LatestGpuSample, type RuleSet } from '@gpualert/engine';
import {
  FLEET_SNAPSHOT_VERSION,
  isGpuIndex,
  MAX_FLEET_EVENTS,
  MAX_FLEET_HOSTS,
  type Envelope,
  type EventView,
  type FleetSnapshot,
  type FleetSource,
  type GpuHistory,
  type HostView,
  type KernelEventData,
} from '@gpualert/schema';

/** Kernel events' texts the view remembers (the state keeps their ids only): the newest, a few per GPU of a large fleet. */
export const MAX_KERNEL_TEXTS = 4_096;
/** Hosts built between two yields: the event loop that judges and answers probes waits no longer than that. */
const HOSTS_PER_SLICE = 250;
/** A built snapshot serves every request this long: several notifiers refreshing cost one build. */
export const FLEET_VIEW_REUSE_MS = 1_000;

/**
 * What the console shows of the hosts this engine owns, from what it already holds: its state
 * (baselines, alerts, windows), each host's latest sample and a bounded history ring per GPU
 * (GpuHistoryRing, ~3 KB a GPU), and the texts of recent kernel events. Fed as each envelope is
 * judged (one Map lookup and a few stores per GPU sample); read on demand, so its cost grows with
 * how often it is asked, not with the sample rate. Served on the engine's port (engine-metrics.ts).
 */
export class EngineFleetView implements FleetSource {
  private state: EngineState | undefined;
  private readonly latest = new Map<string, LatestGpuSample>();
  private readonly rings = new Map<string, Map<number, GpuHistoryRing>>();
  private readonly texts = new Map<string, string>();
  private last: { at: number; snapshot: Promise<FleetSnapshot> } | undefined;

  constructor(
    private ruleSet: RuleSet,
    private readonly clock: 'wall' | 'event',
    private readonly now: () => number = Date.now,
  ) {}

  /** The service's state object (its `hosts` are replaced on each assignment; the object stays). */
  attach(state: EngineState): void {
    this.state = state;
  }

  /** Rules reloaded: bands are drawn by the new ones. */
  reloaded(ruleSet: RuleSet): void {
    this.ruleSet = ruleSet;
  }

  /** An envelope the engine judged: a GPU sample's values, a kernel event's text. */
  note(envelope: Envelope): void {
    if (envelope.type === 'gpu.sample') {
      const at = Date.parse(envelope.ts);
      const last = this.latest.get(envelope.host);
      if (last && last.at > at) return; // a late one: the newest stays
      this.latest.set(envelope.host, { at, gpus: envelope.data.gpus });
      let rings = this.rings.get(envelope.host);
      if (!rings) this.rings.set(envelope.host, (rings = new Map()));
      for (const gpu of envelope.data.gpus) {
        let ring = rings.get(gpu.index);
        if (!ring) rings.set(gpu.index, (ring = new GpuHistoryRing()));
        ring.note(at, gpu);
      }
    } else if (envelope.type === 'kernel.event') {
      this.texts.delete(envelope.id);
      this.texts.set(envelope.id, kernelText(envelope.data));
      if (this.texts.size > MAX_KERNEL_TEXTS) {
        const oldest = this.texts.keys().next();
        if (!oldest.done) this.texts.delete(oldest.value);
      }
    }
  }

  /** A new assignment: the hosts another engine now owns are no longer this one's to show. */
  forget(): void {
    this.latest.clear();
    this.rings.clear();
    this.last = undefined;
  }

  snapshot(now = this.now()): Promise<FleetSnapshot> {
    const last = this.last;
    if (last && now - last.at < FLEET_VIEW_REUSE_MS && now >= last.at) return last.snapshot;
    const snapshot = this.build(now);
    this.last = { at: now, snapshot };
    snapshot.catch(() => (this.last = undefined));
    return snapshot;
  }

  history(host: string, gpu: number): Promise<GpuHistory | null> {
    const state = this.state?.hosts[host];
    const ring = this.rings.get(host)?.get(gpu);
    return Promise.resolve(state && ring && isGpuIndex(gpu) ? gpuHistoryView(state, gpu, ring, this.ruleSet) : null);
  }

  private async build(now: number): Promise<FleetSnapshot> {
    const hosts: HostView[] = [];
    const events: EventView[] = [];
    const owned = this.state ? Object.values(this.state.hosts) : [];
    // Samples of hosts that left (forgotten, or another engine's now) go with them.
    for (const host of this.latest.keys())
      if (this.state?.hosts[host] === undefined) {
        this.latest.delete(host);
        this.rings.delete(host);
      }
    let dataAt = 0;
    const extras = { rings: (host: string) => this.rings.get(host), describe: (id: string) => this.texts.get(id) };
    for (let i = 0; i < owned.length && hosts.length < MAX_FLEET_HOSTS; i += 1) {
      if (i > 0 && i % HOSTS_PER_SLICE === 0) await yieldToLoop();
      const host = owned[i];
      if (!host) continue;
      const built = fleetHostView(host, this.latest.get(host.host), this.ruleSet, extras);
      hosts.push(built.view);
      events.push(...built.events);
      dataAt = Math.max(dataAt, host.lastSample ?? 0, host.lastTick);
    }
    hosts.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
    events.sort((a, b) => b.at - a.at);
    const snapshot: FleetSnapshot = {
      version: FLEET_SNAPSHOT_VERSION,
      at: now,
      source: 'engine',
      hosts,
      omitted_hosts: Math.max(0, owned.length - hosts.length),
      events: events.slice(0, MAX_FLEET_EVENTS),
    };
    // On the event clock the data is a recording (or a replay): its own now is the latest event time judged.
    return this.clock === 'event' && dataAt > 0 ? { ...snapshot, data_at: dataAt } : snapshot;
  }
}

/** A kernel event as a person names it: `Xid 79: GPU has fallen off the bus`, else its kind and line. */
function kernelText(event: KernelEventData): string {
  const what = event.xid !== undefined ? `Xid ${event.xid}` : event.kind.replace(/_/g, ' ');
  const meaning = event.meaning ?? event.message;
  return `${what}: ${meaning}`.slice(0, 300);
}
