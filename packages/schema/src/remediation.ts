import { z } from 'zod';

/**
 * What gpualert may do to a host (issue 29): take it out of service (`drain`), return it
 * (`resume`), ask the operator's command to reset a GPU or reboot the host, or only tell people
 * (`notify-only`, every rule's default).
 */
export const ACTION_KINDS = ['notify-only', 'drain', 'resume', 'reset-gpu', 'reboot'] as const;
export const ActionKind = z.enum(ACTION_KINDS);
export type ActionKind = z.infer<typeof ActionKind>;

/**
 * Where a decided action stands: `proposed` (it will run), `awaiting_approval` (a person must say),
 * `dry_run` (recorded, not run), `refused` (a guard rail said no: the breaker, a bad host name, an
 * unknown partition), `skipped` (the same action already holds or is under way).
 */
export const ACTION_PHASES = ['proposed', 'awaiting_approval', 'dry_run', 'refused', 'skipped'] as const;

/** The longest reason, message or error text an action envelope carries (cut, not refused). */
export const MAX_ACTION_TEXT_LENGTH = 1_024;
const Text = z.string().max(MAX_ACTION_TEXT_LENGTH);
const ActionId = z.string().min(1).max(128);

/** `action` on `gpualert.actions`: a decision about one host. */
export const ActionData = z.object({
  action_id: ActionId,
  kind: ActionKind,
  phase: z.enum(ACTION_PHASES),
  /** The policy rule that decided it (`undo` for a return to service). */
  policy_rule: z.string().min(1).max(256),
  /** The alert behind it, when one is. */
  fingerprint: z.string().max(256).optional(),
  partition: z.string().max(256).optional(),
  reason: Text,
  gpu: z.number().int().min(0).max(255).optional(),
  /** With `awaiting_approval`: until when, and what happens then. */
  approval_deadline: z.iso.datetime().optional(),
  on_timeout: z.enum(['deny', 'proceed']).optional(),
  /** With a `refused` by the circuit breaker: true, and the message pages. */
  breaker_tripped: z.boolean().optional(),
  /** The breaker that action tripped closed again (its window passed): true, and its page resolves. */
  breaker_closed: z.boolean().optional(),
});
export type ActionData = z.infer<typeof ActionData>;

/** `action.approval` on `gpualert.actions`: a person's (or the timeout's) word on an action. */
export const ActionApprovalData = z.object({
  action_id: ActionId,
  decision: z.enum(['approved', 'denied', 'expired']),
  /** Who: a user name, `console`, `timeout`. */
  by: z.string().min(1).max(256),
  comment: Text.optional(),
});
export type ActionApprovalData = z.infer<typeof ActionApprovalData>;

/** `action.result` on `gpualert.actions`: what running an action did. */
export const ActionResultData = z.object({
  action_id: ActionId,
  kind: ActionKind,
  /** `already_held`: the node was already in the state asked for, so nothing was repeated. `retrying`: failed, will run again at `next_attempt_at`. */
  outcome: z.enum(['succeeded', 'already_held', 'retrying', 'failed']),
  attempt: z.number().int().min(1),
  executor: z.string().min(1).max(64),
  error: Text.optional(),
  next_attempt_at: z.iso.datetime().optional(),
});
export type ActionResultData = z.infer<typeof ActionResultData>;
