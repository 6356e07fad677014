import { matchesAll } from '@gpualert/notify';
import { MAX_ACTION_TEXT_LENGTH, newEnvelope, stableId, type ActionKind, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { alertFacts } from './alert-facts.ts';
import { judgeBreaker } from './breaker.ts';
import { nodeNameProblem, quoteName } from './node-name.ts';
import type { Policy, PolicyRule, UndoPolicy } from './policy-file.ts';

/** Actions that take a host (or a GPU of it) out of service: the breaker counts them. */
const DISRUPTIVE: ReadonlySet<ActionKind> = new Set<ActionKind>(['drain', 'reboot', 'reset-gpu']);

/** Hosts the core keeps a record of; past this, the least recently heard without a hold or an action is forgotten. */
export const MAX_TRACKED_HOSTS = 100_000;
/** Open alerts calling for an action, per host: a host with more is already out. */
export const MAX_CALLERS_PER_HOST = 256;
/** Firing alerts remembered per host and rule for `repeat:`. */
export const MAX_REPEATS_PER_RULE = 64;
/** Finished actions remembered (for `action list` and to know a replayed alert): the oldest go first. */
export const MAX_FINISHED_ACTIONS = 10_000;
/** Partitions one host is charged to at most (Slurm lets a node be in several). */
export const MAX_PARTITIONS_PER_HOST = 64;
/** Retries wait 1 s, 2 s, 4 s … up to this, and never give up on an API that is down. */
export const MAX_RETRY_DELAY_MS = 5 * 60_000;

export type ActionStatus =
  'awaiting_approval' | 'running' | 'retry_wait' | 'succeeded' | 'already_held' | 'failed' | 'denied' | 'expired' | 'refused' | 'dry_run';

const OPEN: ReadonlySet<ActionStatus> = new Set<ActionStatus>(['awaiting_approval', 'running', 'retry_wait']);

export interface ActionRecord {
  readonly id: string;
  readonly host: string;
  readonly kind: ActionKind;
  readonly rule: string;
  /** The partition its envelopes are labelled with: the first of `partitions`. */
  readonly partition: string;
  /** Every partition the host is in: the breaker charges the action to each. */
  readonly partitions: readonly string[];
  readonly reason: string;
  readonly createdAt: number;
  readonly dry: boolean;
  readonly fingerprint?: string;
  readonly gpu?: number;
  readonly undo?: UndoPolicy;
  readonly deadline?: number;
  readonly onTimeout?: 'deny' | 'proceed';
  status: ActionStatus;
  attempt: number;
  nextAt?: number;
  /** When it finished (for pruning). */
  endedAt?: number;
}

/** What the executor is asked to do. */
export interface ActionCommand {
  readonly actionId: string;
  readonly host: string;
  readonly kind: ActionKind;
  readonly reason: string;
  readonly attempt: number;
  readonly gpu?: number;
}

/** What running a command did. `already_held`: the node was already as asked, nothing repeated. */
export type ExecutionOutcome =
  | { readonly outcome: 'succeeded' }
  | { readonly outcome: 'already_held' }
  | { readonly outcome: 'failed'; readonly retriable: boolean; readonly error: string };

export interface CoreOutput {
  readonly envelopes: Envelope[];
  readonly commands: ActionCommand[];
  /** Why an alert led to nothing new, when it matched a rule (a replay, a hold already in place). */
  readonly skipped?: string;
}

interface Trip {
  readonly since: number;
  readonly actionId: string;
  readonly host: string;
  readonly kind: ActionKind;
  readonly rule: string;
}

interface Hold {
  readonly actionId: string;
  readonly since: number;
  readonly undo: UndoPolicy;
  readonly dry: boolean;
}

interface HostRecord {
  /** Every partition the host is in (the scheduler's word, else the alert's label). */
  partitions?: readonly string[];
  /** Open firing alerts whose rule calls for a disruptive action: fingerprint → rule. */
  readonly callers: Map<string, string>;
  lastCalledAt?: number;
  readonly repeats: Map<string, { id: string; at: number }[]>;
  hold?: Hold;
  healthyAt?: number;
  rebootAt?: number;
  gpuResetAt?: number;
  heardAt: number;
}

/** Evidence that a host is well again (`undo:` in the policy). */
export type Evidence = 'healthy' | 'reboot' | 'gpu_reset';

export interface CoreOptions {
  /** The `source` of every envelope the core writes, e.g. `remediator/0.1.0`. */
  readonly source: string;
  /** The executor's name for result envelopes (`slurm`, `kubernetes`). */
  readonly executor: string;
}

const cut = (text: string) => (text.length > MAX_ACTION_TEXT_LENGTH ? `${text.slice(0, MAX_ACTION_TEXT_LENGTH - 1)}…` : text);
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The remediation decisions (issue 29), a pure state machine with the clock passed in: alerts in,
 * action envelopes and commands for the executor out. Guard rails first: a host name a scheduler
 * would misread is refused, the circuit breaker caps the share of a partition out of service
 * within a window (and pages once when it trips), a dry run records without acting, an action may
 * wait for a person with a timeout policy, and one (host, action) is never started twice. A hold
 * is undone on the evidence its rule names, never while another open alert still calls for it.
 */
export class RemediationCore {
  private readonly hosts = new Map<string, HostRecord>();
  private readonly actions = new Map<string, ActionRecord>();
  /** Disruptive actions started, per partition, for the breaker's window. */
  private readonly started = new Map<string, { host: string; at: number; dry: boolean }[]>();
  /** Partitions whose breaker is open: since when, and the action whose refusal tripped it (its page). */
  private readonly tripped = new Map<string, Trip>();
  private readonly sizes = new Map<string, number>();
  private readonly hostPartitions = new Map<string, readonly string[]>();

  constructor(
    private policy: Policy,
    private readonly options: CoreOptions,
  ) {}

  /** A new policy (reload): held hosts and open actions keep what they were decided with. */
  setPolicy(policy: Policy): void {
    this.policy = policy;
  }

  /** What the scheduler says: a partition's node count, and which partition(s) each host is in. */
  setInventory(partitions: ReadonlyMap<string, number>, hostPartitions: ReadonlyMap<string, string | readonly string[]> = new Map()): void {
    this.sizes.clear();
    for (const [name, size] of partitions) this.sizes.set(name, size);
    this.hostPartitions.clear();
    for (const [host, names] of hostPartitions) {
      const list = typeof names === 'string' ? [names] : [...new Set(names)].slice(0, MAX_PARTITIONS_PER_HOST);
      if (list.length > 0) this.hostPartitions.set(host, list);
    }
  }

  /** One alert envelope, firing or resolved. */
  alert(alert: EnvelopeOf<'alert'>, now: number): CoreOutput {
    const facts = alertFacts(alert);
    const rule = this.policy.rules.find((r) => matchesAll(r.match, facts));
    const host = this.host(alert.host, now);
    const partitions = this.partitionsOf(alert, facts);
    host.partitions = partitions;
    const fingerprint = alert.data.fingerprint;
    if (alert.data.status === 'resolved') {
      // The quiet period counts from when the last alert calling for the action stopped.
      if (host.callers.delete(fingerprint)) host.lastCalledAt = Math.max(host.lastCalledAt ?? now, now);
      return none();
    }
    if (!rule || rule.action === 'notify-only') return none();
    if (DISRUPTIVE.has(rule.action)) {
      if (host.callers.size < MAX_CALLERS_PER_HOST || host.callers.has(fingerprint)) host.callers.set(fingerprint, rule.name);
      host.lastCalledAt = Math.max(host.lastCalledAt ?? now, now);
    }
    if (rule.repeat && !this.repeated(host, rule, alert.id, now))
      return none(`rule ${rule.name}: waiting for ${rule.repeat.count} firing alerts within the window`);

    // A dry run's record of an alert is not the real action's: a rule made real later (or another,
    // real rule) still acts on it.
    const id = rule.dryRun
      ? stableId('action', alert.host, rule.action, fingerprint, alert.data.starts_at, 'dry-run')
      : stableId('action', alert.host, rule.action, fingerprint, alert.data.starts_at);
    if (this.actions.has(id)) return none(`action ${id} was already decided for this alert`);
    const open = [...this.actions.values()].find((a) => a.host === alert.host && a.kind === rule.action && OPEN.has(a.status));
    if (open) return none(`${rule.action} of ${alert.host} is already under way (action ${open.id})`);
    // A dry run's pretend hold holds only other dry runs: the node is in service, so a real drain goes ahead.
    if (rule.action === 'drain' && host.hold && (!host.hold.dry || rule.dryRun))
      return none(`${alert.host} is already held out of service (action ${host.hold.actionId}${host.hold.dry ? ', dry run' : ''})`);
    if (rule.action === 'resume' && !host.hold) return none(`${alert.host} is not held by gpualert`);

    const record: ActionRecord = {
      id,
      host: alert.host,
      kind: rule.action,
      rule: rule.name,
      partition: partitions[0] ?? 'default',
      partitions,
      reason: cut(rule.reason ?? `gpualert: ${alert.data.summary}`),
      createdAt: now,
      dry: rule.dryRun,
      fingerprint,
      ...(alert.data.gpu ? { gpu: alert.data.gpu.index } : {}),
      undo: rule.undo,
      ...(rule.approval.required && !rule.dryRun ? { deadline: now + rule.approval.timeoutMs, onTimeout: rule.approval.onTimeout } : {}),
      status: 'awaiting_approval',
      attempt: 0,
    };
    this.actions.set(id, record);
    const problem = nodeNameProblem(alert.host);
    if (problem !== undefined) return this.finish(record, 'refused', now, `host ${quoteName(alert.host)} refused: ${problem}`);
    if (record.deadline !== undefined) return { envelopes: [this.actionEnvelope(record, 'awaiting_approval', now)], commands: [] };
    return this.start(record, now);
  }

  /** A person's word on an action waiting for approval; anything else is answered with why not. */
  approve(actionId: string, decision: 'approved' | 'denied', by: string, now: number, comment?: string, decidedAt: number = now): CoreOutput | string {
    const record = this.actions.get(actionId);
    if (!record) return `no action ${quoteName(actionId)}`;
    if (record.status !== 'awaiting_approval') return `action ${actionId} is ${record.status}, not awaiting approval`;
    // A word given after the deadline is the timeout's to answer (the tick expires it, or proceeds as the rule says), never a late approval.
    if (record.deadline !== undefined && decidedAt >= record.deadline)
      return `action ${actionId} passed its approval deadline ${iso(record.deadline)} before this word`;
    const approval = this.approvalEnvelope(record, decision, by, now, comment);
    if (decision === 'denied') {
      record.status = 'denied';
      record.endedAt = now;
      return { envelopes: [approval], commands: [] };
    }
    const started = this.start(record, now);
    return { envelopes: [approval, ...started.envelopes], commands: started.commands };
  }

  /** Evidence that a host is well: a healthy sample, a reboot seen, a GPU reset that succeeded. */
  evidence(host: string, kind: Evidence, at: number): void {
    const record = this.hosts.get(host);
    if (!record) return; // a host never called for an action has nothing to undo
    if (kind === 'healthy') record.healthyAt = Math.max(record.healthyAt ?? at, at);
    else if (kind === 'reboot') record.rebootAt = Math.max(record.rebootAt ?? at, at);
    else record.gpuResetAt = Math.max(record.gpuResetAt ?? at, at);
  }

  /** Whether the core holds or acts on this host (the service feeds evidence only for these). */
  watches(host: string): boolean {
    return this.hosts.get(host)?.hold !== undefined;
  }

  /** What running a command did. */
  result(actionId: string, outcome: ExecutionOutcome, now: number): CoreOutput {
    const record = this.actions.get(actionId);
    if (!record || record.status !== 'running') return none(`action ${actionId} is not running`);
    const host = this.host(record.host, now);
    if (outcome.outcome === 'failed') {
      if (!outcome.retriable) {
        record.status = 'failed';
        record.endedAt = now;
        return { envelopes: [this.resultEnvelope(record, 'failed', now, outcome.error)], commands: [] };
      }
      const delay = Math.min(1_000 * 2 ** Math.min(record.attempt - 1, 20), MAX_RETRY_DELAY_MS);
      record.status = 'retry_wait';
      record.nextAt = now + delay;
      return { envelopes: [this.resultEnvelope(record, 'retrying', now, outcome.error)], commands: [] };
    }
    record.status = outcome.outcome;
    record.endedAt = now;
    if (record.kind === 'drain') host.hold = { actionId: record.id, since: now, undo: record.undo ?? { on: 'never', quietForMs: 0 }, dry: false };
    else if (record.kind === 'resume') delete host.hold;
    else if (record.kind === 'reset-gpu') host.gpuResetAt = now;
    else if (record.kind === 'reboot') host.rebootAt = now;
    return { envelopes: [this.resultEnvelope(record, outcome.outcome, now)], commands: [] };
  }

  /** Time passes: approvals time out, retries fall due, holds whose evidence cleared are undone. */
  tick(now: number): CoreOutput {
    const envelopes: Envelope[] = [];
    const commands: ActionCommand[] = [];
    const add = (out: CoreOutput) => {
      envelopes.push(...out.envelopes);
      commands.push(...out.commands);
    };
    for (const record of [...this.actions.values()]) {
      if (record.status === 'awaiting_approval' && record.deadline !== undefined && now >= record.deadline) {
        if (record.onTimeout === 'proceed') {
          envelopes.push(this.approvalEnvelope(record, 'approved', 'timeout', now));
          add(this.start(record, now));
        } else {
          record.status = 'expired';
          record.endedAt = now;
          envelopes.push(this.approvalEnvelope(record, 'expired', 'timeout', now));
        }
      } else if (record.status === 'retry_wait' && record.nextAt !== undefined && now >= record.nextAt) {
        record.status = 'running';
        record.attempt += 1;
        delete record.nextAt;
        commands.push(this.command(record));
      }
    }
    for (const [name, host] of this.hosts) {
      const why = host.hold ? this.undoEvidence(host, host.hold, now) : undefined;
      if (why !== undefined) add(this.undo(name, host, why, now));
    }
    envelopes.push(...this.closeBreakers([...this.tripped.keys()], now));
    this.prune(now);
    return { envelopes, commands };
  }

  /** Every action remembered, newest first (`gpualert action list`). */
  list(): ActionRecord[] {
    return [...this.actions.values()].sort((a, b) => b.createdAt - a.createdAt);
  }

  get(actionId: string): ActionRecord | undefined {
    return this.actions.get(actionId);
  }

  /** The hosts gpualert holds out of service (dry runs included, marked). */
  holds(): { host: string; actionId: string; since: number; dry: boolean }[] {
    return [...this.hosts].flatMap(([host, r]) => (r.hold ? [{ host, actionId: r.hold.actionId, since: r.hold.since, dry: r.hold.dry }] : []));
  }

  private undoEvidence(host: HostRecord, hold: Hold, now: number): string | undefined {
    if (host.callers.size > 0) return undefined; // another open alert still calls for it
    switch (hold.undo.on) {
      case 'never':
        return undefined;
      case 'reboot':
        return host.rebootAt !== undefined && host.rebootAt > hold.since ? `a reboot at ${iso(host.rebootAt)}` : undefined;
      case 'gpu_reset':
        return host.gpuResetAt !== undefined && host.gpuResetAt > hold.since ? `a GPU reset that succeeded at ${iso(host.gpuResetAt)}` : undefined;
      case 'quiet': {
        const last = host.lastCalledAt ?? hold.since;
        const quiet = now - last >= hold.undo.quietForMs;
        const healthy = host.healthyAt !== undefined && host.healthyAt > last;
        return quiet && healthy ? `quiet for ${Math.round((now - last) / 60_000)} min with healthy samples since` : undefined;
      }
    }
  }

  private undo(name: string, host: HostRecord, why: string, now: number): CoreOutput {
    const hold = host.hold;
    if (!hold) return none();
    const id = stableId('undo', name, hold.actionId);
    if (this.actions.has(id)) return none();
    const record: ActionRecord = {
      id,
      host: name,
      kind: 'resume',
      rule: 'undo',
      partition: host.partitions?.[0] ?? 'default',
      partitions: host.partitions ?? ['default'],
      reason: cut(`gpualert: evidence cleared: ${why}`),
      createdAt: now,
      dry: hold.dry,
      status: 'running',
      attempt: 0,
    };
    this.actions.set(id, record);
    if (hold.dry) {
      delete host.hold;
      return this.finish(record, 'dry_run', now);
    }
    record.attempt = 1;
    return { envelopes: [this.actionEnvelope(record, 'proposed', now)], commands: [this.command(record)] };
  }

  /** An action cleared to run: through the breaker, then to the executor (or only recorded, in a dry run). */
  private start(record: ActionRecord, now: number): CoreOutput {
    if (DISRUPTIVE.has(record.kind)) {
      // A breaker whose window passed closes first (its page resolves), then the action is judged afresh.
      const closed = this.closeBreakers(record.partitions, now);
      const verdict = this.breaker(record, now);
      if (!verdict.allowed) {
        const refused = this.finish(record, 'refused', now, verdict.reason, verdict.trips);
        return { envelopes: [...closed, ...refused.envelopes], commands: [] };
      }
      for (const partition of record.partitions) {
        const list = this.started.get(partition) ?? [];
        list.push({ host: record.host, at: now, dry: record.dry });
        this.started.set(partition, list);
      }
      const started = this.startCleared(record, now);
      return { envelopes: [...closed, ...started.envelopes], commands: started.commands };
    }
    return this.startCleared(record, now);
  }

  private startCleared(record: ActionRecord, now: number): CoreOutput {
    if (record.dry) {
      if (record.kind === 'drain')
        this.host(record.host, now).hold = { actionId: record.id, since: now, undo: record.undo ?? { on: 'never', quietForMs: 0 }, dry: true };
      return this.finish(record, 'dry_run', now);
    }
    record.status = 'running';
    record.attempt = 1;
    return { envelopes: [this.actionEnvelope(record, 'proposed', now)], commands: [this.command(record)] };
  }

  /** The breaker of every partition the host is in: the first that says no refuses (and may trip). */
  private breaker(record: ActionRecord, now: number): { allowed: true } | { allowed: false; reason: string; trips: boolean } {
    const { maxShare, windowMs } = this.policy.breaker;
    const counts = (dry: boolean) => !dry || record.dry; // a dry run counts its own pretend holds; a real action only real ones
    for (const partition of record.partitions) {
      const trip = this.tripped.get(partition);
      if (trip !== undefined)
        return { allowed: false, trips: false, reason: `circuit breaker open for partition ${JSON.stringify(partition)} since ${iso(trip.since)}` };
      const out = new Set<string>();
      for (const [name, host] of this.hosts) if (host.hold && host.partitions?.includes(partition) === true && counts(host.hold.dry)) out.add(name);
      for (const a of this.actions.values())
        if (a.partitions.includes(partition) && DISRUPTIVE.has(a.kind) && (a.status === 'running' || a.status === 'retry_wait')) out.add(a.host);
      for (const s of this.started.get(partition) ?? []) if (now - s.at < windowMs && counts(s.dry)) out.add(s.host);
      out.delete(record.host);
      const verdict = judgeBreaker({ partition, size: this.sizes.get(partition) ?? this.policy.partitions.get(partition), maxShare, out });
      if (verdict.allowed) continue;
      if (verdict.trips && !record.dry)
        this.tripped.set(partition, { since: now, actionId: record.id, host: record.host, kind: record.kind, rule: record.rule });
      return verdict;
    }
    return { allowed: true };
  }

  /** Breakers of these partitions open for a whole window: closed, each with an envelope that resolves its page. */
  private closeBreakers(partitions: readonly string[], now: number): EnvelopeOf<'action'>[] {
    const envelopes: EnvelopeOf<'action'>[] = [];
    for (const partition of partitions) {
      const trip = this.tripped.get(partition);
      if (trip === undefined || now - trip.since < this.policy.breaker.windowMs) continue;
      this.tripped.delete(partition);
      envelopes.push(
        newEnvelope({
          type: 'action',
          id: stableId(trip.actionId, 'action', 'breaker-closed'),
          ts: iso(now),
          host: trip.host.length > 0 && trip.host.length <= 253 ? trip.host : 'invalid-host',
          labels: { partition: partition.slice(0, 1024) },
          source: this.options.source,
          data: {
            action_id: trip.actionId,
            kind: trip.kind,
            phase: 'refused',
            policy_rule: trip.rule,
            partition: partition.slice(0, 256),
            reason: cut(`circuit breaker for partition ${JSON.stringify(partition)} closed: its window passed since it tripped at ${iso(trip.since)}`),
            breaker_closed: true,
          },
        }),
      );
    }
    return envelopes;
  }

  private finish(record: ActionRecord, status: 'refused' | 'dry_run', now: number, why?: string, trips = false): CoreOutput {
    record.status = status;
    record.endedAt = now;
    const envelope = this.actionEnvelope(record, status, now, why, trips);
    return { envelopes: [envelope], commands: [] };
  }

  private repeated(host: HostRecord, rule: PolicyRule, id: string, now: number): boolean {
    const repeat = rule.repeat;
    if (!repeat) return true;
    const seen = (host.repeats.get(rule.name) ?? []).filter((r) => now - r.at < repeat.withinMs);
    if (!seen.some((r) => r.id === id)) seen.push({ id, at: now });
    host.repeats.set(rule.name, seen.slice(-MAX_REPEATS_PER_RULE));
    return seen.length >= repeat.count;
  }

  private partitionsOf(alert: EnvelopeOf<'alert'>, facts: Readonly<Record<string, string>>): readonly string[] {
    return this.hostPartitions.get(alert.host) ?? [facts[this.policy.partitionLabel] ?? facts.cluster ?? 'default'];
  }

  private host(name: string, now: number): HostRecord {
    let record = this.hosts.get(name);
    if (!record) {
      if (this.hosts.size >= MAX_TRACKED_HOSTS) this.forgetIdleHost();
      record = { callers: new Map(), repeats: new Map(), heardAt: now };
      this.hosts.set(name, record);
    }
    record.heardAt = Math.max(record.heardAt, now);
    return record;
  }

  /** The least recently heard host with no hold, no caller and no open action. */
  private forgetIdleHost(): void {
    const busy = new Set([...this.actions.values()].filter((a) => OPEN.has(a.status)).map((a) => a.host));
    let oldest: string | undefined;
    let oldestAt = Infinity;
    for (const [name, r] of this.hosts) {
      if (r.hold || r.callers.size > 0 || busy.has(name)) continue;
      if (r.heardAt < oldestAt) [oldest, oldestAt] = [name, r.heardAt];
    }
    if (oldest !== undefined) this.hosts.delete(oldest);
  }

  private prune(now: number): void {
    const { windowMs } = this.policy.breaker;
    for (const [partition, list] of this.started) {
      const kept = list.filter((s) => now - s.at < windowMs);
      if (kept.length === 0) this.started.delete(partition);
      else this.started.set(partition, kept);
    }
    const finished = [...this.actions.values()].filter((a) => !OPEN.has(a.status));
    if (finished.length <= MAX_FINISHED_ACTIONS) return;
    finished.sort((a, b) => (a.endedAt ?? 0) - (b.endedAt ?? 0));
    for (const a of finished.slice(0, finished.length - MAX_FINISHED_ACTIONS)) this.actions.delete(a.id);
  }

  private command(record: ActionRecord): ActionCommand {
    return {
      actionId: record.id,
      host: record.host,
      kind: record.kind,
      reason: record.reason,
      attempt: record.attempt,
      ...(record.gpu !== undefined ? { gpu: record.gpu } : {}),
    };
  }

  private actionEnvelope(
    record: ActionRecord,
    phase: 'proposed' | 'awaiting_approval' | 'dry_run' | 'refused' | 'skipped',
    now: number,
    why?: string,
    trips = false,
  ): EnvelopeOf<'action'> {
    return newEnvelope({
      type: 'action',
      id: stableId(record.id, 'action', phase),
      ts: iso(now),
      host: record.host.length > 0 && record.host.length <= 253 ? record.host : 'invalid-host',
      labels: { partition: record.partition.slice(0, 1024) },
      source: this.options.source,
      data: {
        action_id: record.id,
        kind: record.kind,
        phase,
        policy_rule: record.rule,
        partition: record.partition.slice(0, 256),
        reason: cut(why === undefined ? record.reason : `${why} (${record.reason})`),
        ...(record.fingerprint !== undefined ? { fingerprint: record.fingerprint.slice(0, 256) } : {}),
        ...(record.gpu !== undefined ? { gpu: record.gpu } : {}),
        ...(phase === 'awaiting_approval' && record.deadline !== undefined
          ? { approval_deadline: iso(record.deadline), on_timeout: record.onTimeout ?? 'deny' }
          : {}),
        ...(trips ? { breaker_tripped: true } : {}),
      },
    });
  }

  private approvalEnvelope(
    record: ActionRecord,
    decision: 'approved' | 'denied' | 'expired',
    by: string,
    now: number,
    comment?: string,
  ): EnvelopeOf<'action.approval'> {
    return newEnvelope({
      type: 'action.approval',
      id: stableId(record.id, 'approval'),
      ts: iso(now),
      host: record.host,
      labels: { partition: record.partition.slice(0, 1024) },
      source: this.options.source,
      data: { action_id: record.id, decision, by: by.slice(0, 256) || 'unknown', ...(comment !== undefined ? { comment: cut(comment) } : {}) },
    });
  }

  private resultEnvelope(
    record: ActionRecord,
    outcome: 'succeeded' | 'already_held' | 'retrying' | 'failed',
    now: number,
    error?: string,
  ): EnvelopeOf<'action.result'> {
    return newEnvelope({
      type: 'action.result',
      id: stableId(record.id, 'result', record.attempt),
      ts: iso(now),
      host: record.host,
      labels: { partition: record.partition.slice(0, 1024) },
      source: this.options.source,
      data: {
        action_id: record.id,
        kind: record.kind,
        outcome,
        attempt: Math.max(1, record.attempt),
        executor: this.options.executor,
        ...(error !== undefined ? { error: cut(error) } : {}),
        ...(outcome === 'retrying' && record.nextAt !== undefined ? { next_attempt_at: iso(record.nextAt) } : {}),
      },
    });
  }
}

function none(skipped?: string): CoreOutput {
  return skipped === undefined ? { envelopes: [], commands: [] } : { envelopes: [], commands: [], skipped };
}
