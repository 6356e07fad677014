import { parseMatchers, type Matcher } from '@gpualert/notify';
import { ACTION_KINDS, type ActionKind } from '@gpualert/schema';
import { z } from 'zod';
import { parsePolicyDuration } from './duration.ts';

/** Rules in one policy file: a handful in practice; the bound keeps a check of every alert short. */
export const MAX_POLICY_RULES = 256;

const Duration = z.string().transform((text, ctx) => {
  const ms = parsePolicyDuration(text);
  if (typeof ms === 'string') {
    ctx.issues.push({ code: 'custom', message: ms, input: text });
    return z.NEVER;
  }
  return ms;
});

const Matchers = z
  .array(z.string())
  .max(64)
  .transform((texts, ctx) => {
    const out: Matcher[] = [];
    texts.forEach((text, i) => {
      const parsed = parseMatchers(text);
      if (typeof parsed === 'string') ctx.issues.push({ code: 'custom', message: parsed, input: text, path: [i] });
      else out.push(...parsed);
    });
    return out;
  });

/**
 * The longest an action may wait for a person: `gpualert action` reads this far back on
 * gpualert.actions, so an action waiting longer could be neither listed nor approved.
 */
export const MAX_APPROVAL_TIMEOUT_MS = 7 * 86_400_000;

/** Whether an action waits for a person, for how long, and what happens when nobody answers. */
const Approval = z.strictObject({
  required: z.boolean().optional(),
  timeout: Duration.refine((ms) => ms <= MAX_APPROVAL_TIMEOUT_MS, {
    message: 'an approval waits at most 7d (gpualert action reads the last 7 days of gpualert.actions)',
  }).optional(),
  on_timeout: z.enum(['deny', 'proceed']).optional(),
});

/**
 * When a quarantined host returns to service: `quiet` (no alert calling for the action for
 * `quiet_for`, and a healthy sample since the last one), `reboot` (a reboot seen after the
 * quarantine), `gpu_reset` (a GPU reset that succeeded), `never` (a person resumes it).
 */
export const UNDO_EVIDENCE = ['quiet', 'reboot', 'gpu_reset', 'never'] as const;
export type UndoEvidence = (typeof UNDO_EVIDENCE)[number];
const Undo = z.strictObject({
  on: z.enum(UNDO_EVIDENCE).optional(),
  quiet_for: Duration.optional(),
});

const Rule = z.strictObject({
  name: z.string().min(1).max(128),
  /** Alertmanager matchers on the alert's labels and facts (`category`, `rule`, `severity`, `xid`, `host`, …): all must hold. */
  match: Matchers,
  action: z.enum(ACTION_KINDS),
  /** The reason given to the scheduler (Slurm's `reason=`, the taint's value); default: the alert's summary. */
  reason: z.string().min(1).max(256).optional(),
  /** Act only on the `count`-th matching firing alert for the host within `within` (a GSP timeout that repeats). */
  repeat: z.strictObject({ count: z.number().int().min(2).max(64), within: Duration }).optional(),
  approval: Approval.optional(),
  undo: Undo.optional(),
  dry_run: z.boolean().optional(),
});

export const PolicyFile = z.strictObject({
  /** Record what would be done and do nothing (every rule). */
  dry_run: z.boolean().optional(),
  /** The alert label naming a host's partition (default `partition`, then `cluster`). */
  partition_label: z.string().min(1).max(128).optional(),
  /** Never take out of service more than `max_share` of a partition within `window`. */
  breaker: z.strictObject({ max_share: z.number().gt(0).max(1), window: Duration }).optional(),
  /** Partition sizes, where the scheduler cannot say (the Slurm executor reads them from sinfo). */
  partitions: z.record(z.string().min(1).max(256), z.number().int().min(1).max(1_000_000)).optional(),
  defaults: z.strictObject({ approval: Approval.optional(), undo: Undo.optional() }).optional(),
  rules: z.array(Rule).max(MAX_POLICY_RULES),
});
export type PolicyFile = z.infer<typeof PolicyFile>;

export interface ApprovalPolicy {
  readonly required: boolean;
  readonly timeoutMs: number;
  readonly onTimeout: 'deny' | 'proceed';
}

export interface UndoPolicy {
  readonly on: UndoEvidence;
  readonly quietForMs: number;
}

export interface PolicyRule {
  readonly name: string;
  readonly match: readonly Matcher[];
  readonly action: ActionKind;
  readonly reason?: string;
  readonly repeat?: { readonly count: number; readonly withinMs: number };
  readonly approval: ApprovalPolicy;
  readonly undo: UndoPolicy;
  readonly dryRun: boolean;
}

export interface Policy {
  readonly rules: readonly PolicyRule[];
  readonly partitionLabel: string;
  readonly breaker: { readonly maxShare: number; readonly windowMs: number };
  readonly partitions: ReadonlyMap<string, number>;
}

const DEFAULT_APPROVAL: ApprovalPolicy = { required: false, timeoutMs: 30 * 60_000, onTimeout: 'deny' };
const DEFAULT_UNDO: UndoPolicy = { on: 'quiet', quietForMs: 30 * 60_000 };
/** NVSentinel's and medik8s' spirit: a tenth of a partition within an hour, unless the file says otherwise. */
const DEFAULT_BREAKER = { maxShare: 0.1, windowMs: 3_600_000 };

/** A checked policy file as the core uses it: every rule's approval and undo filled from the defaults. */
export function policyOf(file: PolicyFile): Policy {
  const approval = { ...DEFAULT_APPROVAL, ...definedApproval(file.defaults?.approval) };
  const undo = { ...DEFAULT_UNDO, ...definedUndo(file.defaults?.undo) };
  return {
    partitionLabel: file.partition_label ?? 'partition',
    breaker: file.breaker ? { maxShare: file.breaker.max_share, windowMs: file.breaker.window } : DEFAULT_BREAKER,
    partitions: new Map(Object.entries(file.partitions ?? {})),
    rules: file.rules.map((r) => ({
      name: r.name,
      match: r.match,
      action: r.action,
      ...(r.reason !== undefined ? { reason: r.reason } : {}),
      ...(r.repeat ? { repeat: { count: r.repeat.count, withinMs: r.repeat.within } } : {}),
      approval: { ...approval, ...definedApproval(r.approval) },
      undo: { ...undo, ...definedUndo(r.undo) },
      dryRun: r.dry_run ?? file.dry_run ?? false,
    })),
  };
}

function definedApproval(a: z.infer<typeof Approval> | undefined): Partial<ApprovalPolicy> {
  return {
    ...(a?.required !== undefined ? { required: a.required } : {}),
    ...(a?.timeout !== undefined ? { timeoutMs: a.timeout } : {}),
    ...(a?.on_timeout !== undefined ? { onTimeout: a.on_timeout } : {}),
  };
}

function definedUndo(u: z.infer<typeof Undo> | undefined): Partial<UndoPolicy> {
  return { ...(u?.on !== undefined ? { on: u.on } : {}), ...(u?.quiet_for !== undefined ? { quietForMs: u.quiet_for } : {}) };
}

/** A policy with no rules: every alert is only told (notify-only). */
export const NOTIFY_ONLY: Policy = policyOf({ rules: [] });
