import { z } from 'zod';
import { CONTROL_CHARACTERS } from './bounds.ts';

/**
 * A job's name or id, a rank's user, a pod or container: Slurm ids are digits (`12345_7` for an
 * array task), Kubernetes names at most 253 characters, container ids 64 hex digits; 256 holds
 * them all. No control characters: they reach an operator's terminal and every alert's labels.
 */
export const MAX_JOB_TEXT_LENGTH = 256;

/** A bounded, single-line piece of text about a job: 1 to 256 characters, no control characters. */
export const JobText = z
  .string()
  .min(1)
  .max(MAX_JOB_TEXT_LENGTH)
  .refine((v) => !CONTROL_CHARACTERS.test(v), 'expected text without control characters');

export function isJobText(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_JOB_TEXT_LENGTH && !CONTROL_CHARACTERS.test(v);
}

/** What a GPU is running, per the collector: the job of its first compute process (docs/architecture.md, "Job attribution"). */
export const JobAttribution = z.object({
  /** Slurm job id (`SLURM_JOB_ID` or the cgroup's `job_<id>`). */
  job: JobText.optional(),
  /** The job's user (`SLURM_JOB_USER`), or a plain process's user from the passwd file. */
  job_user: JobText.optional(),
  /** `SLURM_JOB_NAME`, or a plain process's command. */
  job_name: JobText.optional(),
  namespace: JobText.optional(),
  pod: JobText.optional(),
  pod_uid: JobText.optional(),
  container: JobText.optional(),
});
export type JobAttribution = z.infer<typeof JobAttribution>;
export const JOB_ATTRIBUTION_KEYS = Object.keys(JobAttribution.shape) as readonly (keyof JobAttribution)[];
