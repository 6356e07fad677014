import { maxSeverity, severityRank, stableId, type AlertData, type Severity } from '@gpualert/schema';
import { busByIndex } from './bus-by-index.ts';
import type { HostState, Tracker } from './engine-state.ts';
import type { RuleSpec } from './rule-set.ts';

/** Transitions within this window that make an alert flap. */
const FLAP_WINDOW_MS = 30 * 60_000;
const FLAP_TRANSITIONS = 6;
/** Alerts of one host this close together are one incident. */
const INCIDENT_WINDOW_MS = 5 * 60_000;
/** Around a maintenance window, fallout is still expected. */
const MAINTENANCE_SLACK_MS = 15 * 60_000;

/** An alert transition before it is wrapped in an envelope. */
export interface Transition {
  readonly host: string;
  readonly ts: number;
  readonly data: AlertData;
  /** Labels the alert carries besides its host's: the job running on its GPU, or the job it is about. */
  readonly labels?: Readonly<Record<string, string>> | undefined;
}

/** What a condition says about itself at one moment. */
export interface Observation {
  readonly breaching: boolean;
  readonly value?: number | undefined;
  readonly summary: string;
  readonly description?: string | undefined;
  readonly evidence?: readonly string[];
  readonly severity?: Severity;
  /** What the condition is the root cause of (`cooling`), said on its alerts. */
  readonly rootCause?: string;
  /** The incident it belongs to, across hosts: a job rank's timeout linked to the GPU fault that caused it. */
  readonly incident?: string | undefined;
  /** Labels its alerts carry besides the host's (`job`, `job_user`…). */
  readonly labels?: Record<string, string> | undefined;
}

export function fingerprintOf(host: string, key: string): string {
  return stableId('alert', host, key).slice(0, 18).replace(/-/g, '');
}

export function fill(template: string, values: Record<string, string | number | undefined>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) return `{${name}}`;
    return typeof value === 'number' ? String(Math.round(value * 10) / 10) : value;
  });
}

/** Is the host inside (or just around) an announced maintenance window at `at`? */
export function inMaintenance(state: HostState, at: number): boolean {
  for (const window of Object.values(state.maintenance)) {
    if (window.status === 'cancelled') continue;
    if (window.status === 'completed' && window.end === undefined) continue;
    const start = (window.start ?? -Infinity) - MAINTENANCE_SLACK_MS;
    const end = window.end !== undefined ? window.end + MAINTENANCE_SLACK_MS : window.status === 'completed' ? -Infinity : Infinity;
    if (at >= start && at <= end) return true;
  }
  return false;
}

/**
 * The one place alert conditions change state: `for` durations, latching, flapping, incidents
 * and what gets said. Every rule kind feeds observations in; transitions come out.
 */
export class Conditions {
  constructor(
    private readonly templates: readonly string[],
    private readonly out: Transition[],
  ) {}

  /** Feeds one observation of a condition keyed `key` (rule|gpu|…) under `rule`. */
  observe(state: HostState, key: string, rule: RuleSpec, gpu: number | undefined, at: number, o: Observation, latch = false): void {
    let tracker = state.trackers[key];
    if (!o.breaching) {
      if (!tracker) return;
      delete tracker.since;
      if (tracker.firing && !tracker.latched && tracker.quietMs === undefined) this.resolve(state, key, tracker, at);
      else if (!tracker.firing && tracker.transitions.length === 0) delete state.trackers[key]; // never fired: forget it
      return;
    }
    if (!tracker) {
      tracker = {
        rule: rule.id,
        category: rule.category,
        since: at,
        firing: false,
        told: 'none',
        severity: o.severity ?? rule.severity,
        baseSeverity: o.severity ?? rule.severity,
        lastBreach: at,
        latched: false,
        transitions: [],
        flapping: false,
        evidence: [],
        summary: o.summary,
        action: rule.action,
      };
      if (gpu !== undefined) tracker.gpu = gpu;
      state.trackers[key] = tracker;
    }
    tracker.since ??= at;
    tracker.lastBreach = at;
    tracker.summary = o.summary;
    if (o.description !== undefined) tracker.description = o.description;
    if (o.value !== undefined) tracker.value = o.value;
    if (o.rootCause !== undefined) tracker.rootCause = o.rootCause;
    if (o.incident !== undefined) tracker.incident = o.incident;
    if (o.labels !== undefined) tracker.labels = o.labels;
    for (const id of o.evidence ?? []) if (!tracker.evidence.includes(id)) tracker.evidence.push(id);
    if (tracker.evidence.length > 20) tracker.evidence.splice(0, tracker.evidence.length - 20);
    const severity = o.severity ?? rule.severity;
    if (tracker.firing) {
      if (severityRank(severity) > severityRank(tracker.severity)) {
        tracker.severity = severity;
        this.tell(state, key, tracker, 'firing', at); // escalated by a worse observation
      }
      return;
    }
    tracker.severity = maxSeverity(tracker.severity, severity);
    if (at - tracker.since >= rule.for) {
      tracker.firing = true;
      tracker.startsAt = at;
      tracker.latched = latch;
      this.transition(state, key, tracker, 'firing', at);
    }
  }

  /** A firing condition said again as it is now (a maintenance window the provider moved): no transition, no flapping count. */
  retell(state: HostState, key: string, at: number): void {
    const tracker = state.trackers[key];
    if (tracker?.firing && !tracker.flapping) this.tell(state, key, tracker, 'firing', at);
  }

  /** Ends a condition: recovery seen, a quiet period over, or an operator's word. */
  resolve(state: HostState, key: string, tracker: Tracker, at: number): void {
    tracker.firing = false;
    tracker.latched = false;
    delete tracker.since;
    this.transition(state, key, tracker, 'resolved', at);
    // Kept while its recent transitions matter for flapping; `tick` forgets it after that.
  }

  /** Time-based changes: escalation while firing, the end of a flapping episode. */
  tick(state: HostState, key: string, tracker: Tracker, rule: RuleSpec | undefined, at: number): void {
    if (!tracker.firing && !tracker.flapping && tracker.since === undefined && tracker.transitions.every((t) => at - t >= FLAP_WINDOW_MS)) {
      delete state.trackers[key];
      return;
    }
    if (tracker.firing && tracker.startsAt !== undefined && rule) {
      let target = tracker.baseSeverity;
      for (const step of rule.escalate) if (at - tracker.startsAt >= step.after) target = maxSeverity(target, step.severity);
      if (severityRank(target) > severityRank(tracker.severity)) {
        tracker.severity = target;
        this.tell(state, key, tracker, 'firing', at);
      }
    }
    if (tracker.firing && tracker.quietMs !== undefined && !tracker.latched && at - tracker.lastBreach >= tracker.quietMs) {
      this.resolve(state, key, tracker, at);
      return;
    }
    if (tracker.flapping && tracker.transitions.every((t) => at - t >= FLAP_WINDOW_MS)) {
      tracker.flapping = false;
      this.emit(state, `${key}|flapping`, { ...tracker, rule: 'flapping', summary: `stopped flapping: ${tracker.summary}` }, 'resolved', at);
      const now: 'firing' | 'resolved' = tracker.firing ? 'firing' : 'resolved';
      if (tracker.told !== now) this.tell(state, key, tracker, now, at);
      if (!tracker.firing) delete state.trackers[key];
    }
  }

  private transition(state: HostState, key: string, tracker: Tracker, status: 'firing' | 'resolved', at: number): void {
    tracker.transitions = tracker.transitions.filter((t) => at - t < FLAP_WINDOW_MS);
    tracker.transitions.push(at);
    if (!tracker.flapping && tracker.transitions.length >= FLAP_TRANSITIONS) {
      // One message instead of a storm; the underlying alert's resolve is held until it settles.
      tracker.flapping = true;
      this.emit(state, `${key}|flapping`, { ...tracker, rule: 'flapping', summary: `flapping: ${tracker.summary}` }, 'firing', at);
      return;
    }
    if (tracker.flapping) return;
    this.tell(state, key, tracker, status, at);
  }

  private tell(state: HostState, key: string, tracker: Tracker, status: 'firing' | 'resolved', at: number): void {
    tracker.told = status;
    this.emit(state, key, tracker, status, at);
  }

  private emit(state: HostState, key: string, tracker: Tracker, status: 'firing' | 'resolved', at: number): void {
    const fingerprint = fingerprintOf(state.host, key);
    let incident: string | undefined;
    // A GPU alert a cooling fault of its host explains joins the cooling incident, whatever its time.
    const cooling =
      tracker.gpu !== undefined && state.cooling && at <= state.cooling.until && state.cooling.explains.includes(tracker.rule) ? state.cooling : undefined;
    if (tracker.incident !== undefined && status === 'firing') {
      incident = tracker.incident; // linked across hosts by its judge: the host's own incident is not its
    } else if (cooling && status === 'firing') {
      incident = cooling.incident;
      state.incident = { fingerprint: cooling.incident, until: at };
      state.incident.until = at + INCIDENT_WINDOW_MS;
    } else if (status === 'firing' && tracker.category !== 'maintenance' && tracker.category !== 'drift') {
      if (state.incident && at <= state.incident.until) incident = state.incident.fingerprint;
      else state.incident = { fingerprint, until: at };
      state.incident.until = at + INCIDENT_WINDOW_MS;
    }
    const data: AlertData = {
      fingerprint,
      status,
      severity: tracker.severity,
      category: tracker.category as AlertData['category'],
      rule: tracker.rule,
      summary: tracker.summary,
      action: tracker.action,
      starts_at: new Date(tracker.startsAt ?? at).toISOString(),
      evidence: [...tracker.evidence],
      templates: [...this.templates],
    };
    if (tracker.gpu !== undefined) data.gpu = gpuRef(state, tracker.gpu);
    if (tracker.description !== undefined) data.description = tracker.description;
    if (tracker.value !== undefined) data.value = tracker.value;
    if (status === 'resolved') data.ends_at = new Date(at).toISOString();
    if (incident && incident !== fingerprint) data.incident = incident;
    const rootCause = cooling ? 'cooling' : tracker.rootCause;
    if (rootCause !== undefined) data.root_cause = rootCause;
    if (tracker.category !== 'maintenance' && inMaintenance(state, tracker.startsAt ?? at)) data.expected = true;
    if (tracker.category === 'maintenance') {
      const window = windowOf(state, key, tracker.rule);
      if (window) data.window = window;
    }
    const labels = tracker.labels ?? (tracker.gpu !== undefined ? state.gpus[tracker.gpu]?.job : undefined);
    this.out.push(labels ? { host: state.host, ts: at, data, labels } : { host: state.host, ts: at, data });
  }
}

/** A maintenance tracker's window (its key is `rule|event id`), in the provider's times; undefined when it announced none. */
function windowOf(state: HostState, key: string, rule: string): AlertData['window'] {
  if (!key.startsWith(`${rule}|`)) return undefined;
  const id = key.slice(rule.length + 1);
  const w = Object.hasOwn(state.maintenance, id) ? state.maintenance[id] : undefined;
  if (!w) return undefined;
  const start = isoOf(w.start);
  const end = isoOf(w.end);
  if (start === undefined && end === undefined) return undefined;
  return { ...(start !== undefined ? { start } : {}), ...(end !== undefined ? { end } : {}) };
}

function isoOf(t: number | undefined): string | undefined {
  if (t === undefined) return undefined;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

function gpuRef(state: HostState, index: number): NonNullable<AlertData['gpu']> {
  const bus = busByIndex(state.inventory?.buses, index);
  return bus ? { index, pci_bus: bus } : { index };
}
