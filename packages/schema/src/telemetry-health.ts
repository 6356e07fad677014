import { z } from 'zod';
import { CONTROL_CHARACTERS } from './bounds.ts';

/**
 * A host agent's word on each of its telemetry sources (issue 31): a source that goes quiet
 * (nvidia-smi or DCGM hung, the exporter's values frozen, the kernel log's reader stopped, Fabric
 * Manager down) is not a healthy one, and a silent GPU must not read as a quiet one.
 * `telemetry.health` is published on `gpualert.host.samples`, keyed by host, every 30 s and at
 * once when a source's state changes.
 */

/** Sources per heartbeat: the agent runs a handful. */
export const MAX_TELEMETRY_SOURCES = 32;
export const MAX_TELEMETRY_MESSAGE_LENGTH = 512;

/**
 * `ok`; `stalled`: a run did not finish in its stated time (killed, or still hanging); `stale`:
 * it answers with values that stopped changing; `stopped`: the reader ended or cannot read;
 * `down`: the service it watches is not running.
 */
export const TELEMETRY_STATES = ['ok', 'stalled', 'stale', 'stopped', 'down'] as const;
export const TelemetryState = z.enum(TELEMETRY_STATES);
export type TelemetryState = z.infer<typeof TelemetryState>;

export const TelemetrySource = z.object({
  /** `nvidia-smi`, `dcgm`, `kernel-log`, `fabric-manager`: lower case, digits and dashes. */
  source: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z0-9][a-z0-9-]*$/, 'expected a source name of lower-case letters, digits and dashes'),
  state: TelemetryState,
  /** Seconds since the source last gave fresh data; absent before it ever did. */
  quiet_s: z.number().nonnegative().finite().optional(),
  /** What the agent saw, for a person: "nvidia-smi did not answer within 10 s and was killed". */
  message: z
    .string()
    .max(MAX_TELEMETRY_MESSAGE_LENGTH)
    .refine((v) => !CONTROL_CHARACTERS.test(v), 'expected a message without control characters')
    .optional(),
});
export type TelemetrySource = z.infer<typeof TelemetrySource>;

export const TelemetryHealthData = z.object({
  /** How often the agent sends this: a heartbeat older than a few of these is a dead agent. */
  interval_s: z.number().positive().max(3_600),
  sources: z.array(TelemetrySource).max(MAX_TELEMETRY_SOURCES),
});
export type TelemetryHealthData = z.infer<typeof TelemetryHealthData>;
