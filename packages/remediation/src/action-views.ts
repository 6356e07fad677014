import { ACTION_PHASES, type Envelope } from '@gpualert/schema';

const PHASES: ReadonlySet<string> = new Set(ACTION_PHASES);

/** Actions a read folds: the newest this many (the oldest dropped first), whatever the topic holds. */
export const MAX_ACTION_VIEWS = 10_000;

/**
 * Where one action stands, folded from its envelopes on gpualert.actions: what was decided
 * (`action`), a person's or the timeout's word (`action.approval`) and what running it did
 * (`action.result`). `state` is the latest of the three: a phase, a decision or an outcome.
 */
export interface ActionView {
  readonly id: string;
  readonly host: string;
  readonly kind: string;
  state: string;
  readonly rule: string;
  /** When it was first decided (ISO-8601). */
  readonly at: string;
  /** When its state last changed (ISO-8601). */
  updated: string;
  readonly reason: string;
  readonly gpu?: number;
  readonly partition?: string;
  /** While it waits for a person: until when, and what the timeout does. */
  readonly approval_deadline?: string;
  readonly on_timeout?: 'deny' | 'proceed';
  /** Who approved, denied or let it expire, and why. */
  decided_by?: string;
  comment?: string;
  /** The latest result's attempt and error. */
  attempt?: number;
  error?: string;
}

/** Whether a person may still approve or deny the action: it waits, and (given `now`) its deadline has not passed. */
export function awaitsApproval(view: ActionView, now?: number): boolean {
  if (view.state !== 'awaiting_approval') return false;
  const deadline = view.approval_deadline === undefined ? NaN : Date.parse(view.approval_deadline);
  return now === undefined || !Number.isFinite(deadline) || now < deadline;
}

/**
 * The envelopes of gpualert.actions, in topic order, folded to where each action stands. An
 * approval or a result whose action was not read (older than the read, or dropped past `max`) is
 * passed over. Keyed by id in a Map: an id from the topic never becomes an object key.
 */
export function foldActions(envelopes: Iterable<Envelope>, max: number = MAX_ACTION_VIEWS): Map<string, ActionView> {
  const views = new Map<string, ActionView>();
  for (const e of envelopes) {
    if (e.type === 'action') {
      const d = e.data;
      const before = views.get(d.action_id);
      // A replayed decision (the same id) keeps when it was first made, and never undoes a decision or result read since.
      if (before && !PHASES.has(before.state)) continue;
      views.set(d.action_id, {
        id: d.action_id,
        host: e.host,
        kind: d.kind,
        state: d.phase,
        rule: d.policy_rule,
        at: before?.at ?? e.ts,
        updated: e.ts,
        reason: d.reason,
        ...(d.gpu !== undefined ? { gpu: d.gpu } : {}),
        ...(d.partition !== undefined ? { partition: d.partition } : {}),
        ...(d.approval_deadline !== undefined ? { approval_deadline: d.approval_deadline } : {}),
        ...(d.on_timeout !== undefined ? { on_timeout: d.on_timeout } : {}),
      });
      if (views.size > max) views.delete(views.keys().next().value ?? '');
    } else if (e.type === 'action.approval') {
      const view = views.get(e.data.action_id);
      if (!view) continue;
      view.state = e.data.decision;
      view.updated = e.ts;
      view.decided_by = e.data.by;
      if (e.data.comment !== undefined) view.comment = e.data.comment;
    } else if (e.type === 'action.result') {
      const view = views.get(e.data.action_id);
      if (!view) continue;
      view.state = e.data.outcome;
      view.updated = e.ts;
      view.attempt = e.data.attempt;
      if (e.data.error !== undefined) view.error = e.data.error;
      else delete view.error;
    }
  }
  return views;
}

/** Newest first: by when each was decided, then by id (a stable order for equal times). */
export function newestFirst(views: Iterable<ActionView>): ActionView[] {
  return [...views].sort((a, b) => b.at.localeCompare(a.at) || a.id.localeCompare(b.id));
}
