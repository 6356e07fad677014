import { z } from 'zod';
import { GpuIndex } from './metrics.ts';

/**
 * One GPU's usage over one hour of event time (docs/architecture.md, "Usage rollups"): what a
 * month's report reads instead of a month of samples. The envelope's `host` is the GPU's machine,
 * its `ts` the hour's start, its labels what the GPU was known by (`provider`, `cluster`,
 * `gpu_model`, `instance_type`, `instance_id`, `job`, `user`).
 */

/** Minutes in an hour; a rollup's states never add up to more. */
export const MINUTES_PER_HOUR = 60;
/** The alerts and provider events named as evidence in one rollup: enough for a support case, bounded per message. */
export const MAX_USAGE_EVIDENCE = 16;

const minutes = z.number().finite().min(0).max(MINUTES_PER_HOUR);
const hourStart = z.iso.datetime({ offset: false }).refine((v) => Date.parse(v) % 3_600_000 === 0, 'expected the start of an hour (hh:00:00)');

export const UsageMinutes = z.object({
  /** Seen: the host sent samples and this GPU was in them, or was known and missing from them (broken). */
  up: minutes,
  /** Up, at or above the busy threshold, and neither broken nor in maintenance. */
  busy: minutes,
  /** Up, below the busy threshold, and neither broken nor in maintenance. */
  idle: minutes,
  /** Up while in a firing error or critical fault alert, or fallen off the bus (missing from its host's samples). */
  broken: minutes,
  /** Up inside an open provider maintenance window of the host, and not broken. */
  maintenance: minutes,
});
export type UsageMinutes = z.infer<typeof UsageMinutes>;

export const UsageRollupData = z
  .object({
    gpu: GpuIndex,
    uuid: z.string().min(1).max(128).optional(),
    /** The hour's start, ISO-8601 UTC, on the hour. */
    hour: hourStart,
    minutes: UsageMinutes,
    /** The utilisation at or above which a GPU counted as busy (the idle-cost rule's `util_below`). */
    busy_threshold_pct: z.number().finite().min(0).max(100),
    /** The fingerprints of the alerts that made minutes broken, and the provider event ids of the maintenance windows. */
    evidence: z.object({
      alerts: z.array(z.string().min(1).max(256)).max(MAX_USAGE_EVIDENCE),
      provider_events: z.array(z.string().min(1).max(256)).max(MAX_USAGE_EVIDENCE),
    }),
  })
  .check((ctx) => {
    const m = ctx.value.minutes;
    // States partition the up time (to rounding): a report may add them without double counting.
    if (Math.abs(m.busy + m.idle + m.broken + m.maintenance - m.up) > 0.01) {
      ctx.issues.push({ code: 'custom', message: 'busy + idle + broken + maintenance equal to up', input: m, path: ['minutes'] });
    }
  });
export type UsageRollupData = z.infer<typeof UsageRollupData>;
