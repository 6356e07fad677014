import { z } from 'zod';
import { FORBIDDEN_LABEL_NAME } from './bounds.ts';
import { JobText } from './job-attribution.ts';
import { toInertRecord } from './inert-record.ts';
import { GpuIndex } from './metrics.ts';

/** One job-event message: a log line's worth (a stack trace's first line, NCCL's WARN text), cut past this. */
export const MAX_JOB_MESSAGE_LENGTH = 2_048;

/** Extra fields per job event (loss, lr, epoch, tokens/s…): a trainer's progress line prints a dozen. */
export const MAX_JOB_EVENT_FIELDS = 32;
/** A field's name (`grad_norm`, `learning rate`) and a text value (`bf16`) are short. */
export const MAX_JOB_FIELD_NAME_LENGTH = 64;
export const MAX_JOB_FIELD_TEXT_LENGTH = 256;

/** Ranks count from 0; the largest runs reported hold about 100,000 GPUs, so 2^20 leaves ten times that. */
export const MAX_JOB_RANK = 1_048_575;

export const JOB_EVENT_KINDS = ['step', 'checkpoint', 'collective_timeout', 'nccl_error', 'cuda_error', 'oom', 'restart', 'exit'] as const;
export const JobEventKind = z.enum(JOB_EVENT_KINDS);
export type JobEventKind = z.infer<typeof JobEventKind>;

const FieldValue = z.union([z.number().finite(), z.string().max(MAX_JOB_FIELD_TEXT_LENGTH)]);

/** A trainer's extra numbers and words, bounded, parsed into a record that inherits nothing. */
export const JobEventFields = z
  .unknown()
  .check((ctx) => {
    const v = ctx.value;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return;
    const count = Object.keys(v).length;
    if (count > MAX_JOB_EVENT_FIELDS)
      ctx.issues.push({ code: 'custom', message: `at most ${MAX_JOB_EVENT_FIELDS} fields`, input: `${count} fields`, continue: false });
    else if (Object.hasOwn(v, FORBIDDEN_LABEL_NAME))
      ctx.issues.push({ code: 'custom', message: `a field name other than ${FORBIDDEN_LABEL_NAME}`, input: v, path: [FORBIDDEN_LABEL_NAME], continue: false });
  })
  .pipe(z.record(z.string().min(1).max(MAX_JOB_FIELD_NAME_LENGTH), FieldValue))
  .transform((fields) => toInertRecord(fields));

/**
 * One thing a training job said or reported: a step, a checkpoint, or a failure. `host` is the
 * envelope's; `rank` and `gpu` say which process on it, when known.
 */
export const JobEventData = z
  .object({
    job: JobText,
    kind: JobEventKind,
    rank: z.number().int().nonnegative().max(MAX_JOB_RANK).optional(),
    gpu: GpuIndex.optional(),
    /** The training step (iteration) the event is at. */
    step: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
    /** How long one step took, in ms (Megatron's `elapsed time per iteration (ms)`, a report). */
    step_time_ms: z.number().finite().nonnegative().optional(),
    /** With kind `checkpoint`: whether it was written. */
    checkpoint: z.enum(['ok', 'failed']).optional(),
    /** With kind `exit`: the process's exit status, when known. */
    exit_code: z.number().int().optional(),
    /** The log line (or a report's words), cut to `MAX_JOB_MESSAGE_LENGTH`. */
    message: z.string().max(MAX_JOB_MESSAGE_LENGTH),
    /** Which pattern of rules/job-patterns.yaml read it (absent for a direct report). */
    pattern: z.string().min(1).max(MAX_JOB_FIELD_NAME_LENGTH).optional(),
    fields: JobEventFields.optional(),
  })
  .check((ctx) => {
    const d = ctx.value;
    if (d.kind === 'checkpoint' && d.checkpoint === undefined)
      ctx.issues.push({ code: 'custom', message: 'a checkpoint event says ok or failed', input: d.checkpoint, path: ['checkpoint'] });
    if (d.kind !== 'checkpoint' && d.checkpoint !== undefined)
      ctx.issues.push({ code: 'custom', message: 'only a checkpoint event has a checkpoint outcome', input: d.checkpoint, path: ['checkpoint'] });
  });
export type JobEventData = z.infer<typeof JobEventData>;
