/**
 * Bounds at the door: what one envelope may hold. Every service validates with these (through
 * `parseEnvelope`), so one message can cost only so much memory and judging time; the list and
 * the reasons are in docs/architecture.md, "Bounds at the door".
 */

/** A host is a hostname or a provider instance id: 253 is the longest DNS name, and longer than any instance id. */
export const MAX_HOST_LENGTH = 253;

/**
 * C0 and C1 control characters (and DEL): no hostname or instance id holds one, and in a host
 * they would reach an operator's terminal as escape sequences (clearing the screen, forging a line).
 */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/** A host name fit to be one: 1 to 253 characters, none of them a control character. */
export function isHostName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_HOST_LENGTH && !CONTROL_CHARACTERS.test(value);
}

/**
 * The largest single machines hold 16 to 20 GPUs (DGX-2, 20-slot PCIe chassis) and composable
 * fabrics attach up to 64: 256 leaves four times that, and a sample at the bound judges in about a millisecond.
 */
export const MAX_GPUS_PER_SAMPLE = 256;

/**
 * GPU indexes count from 0 on each machine (nvidia-smi, DCGM), so the last of 256 is 255; bounded,
 * a host's per-GPU state is too, whatever indexes a stream of samples makes up.
 */
export const MAX_GPU_INDEX = MAX_GPUS_PER_SAMPLE - 1;

/** A GPU index as every envelope carries one: a whole number from 0 to `MAX_GPU_INDEX`. */
export function isGpuIndex(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_GPU_INDEX;
}

/**
 * A provider's notice names one instance (AWS, GCP, Azure, OCI) or at most a rack or pod for a
 * generic one: 1,000 hosts of the longest name still fit a provider event in Kafka's default 1 MB message.
 */
export const MAX_HOSTS_PER_PROVIDER_EVENT = 1_000;

/** Collectors set half a dozen labels (cluster, provider, rack, job, owner…); every alert copies them all. */
export const MAX_LABELS = 64;

/** A full Kubernetes label key (a 253-character DNS prefix, `/`, a 63-character name) fits. */
export const MAX_LABEL_NAME_LENGTH = 317;

/** Job names, owners and racks are short; 1 KiB bounds what each alert and silence match copies. */
export const MAX_LABEL_VALUE_LENGTH = 1_024;

/**
 * How far ahead of its receipt an event may be dated. Hosts without NTP drift seconds a day; one
 * dated further ahead would hold a host's clock there and hide it going down, so it is dead-lettered.
 */
export const MAX_EVENT_LEAD_MS = 5 * 60_000;

/**
 * How old an event may be when it is received: Kafka's default retention, so a backlog worked off
 * after any outage the log survived is still judged; older means a wrong clock (an RTC at 1970).
 */
export const MAX_EVENT_AGE_MS = 7 * 24 * 3_600_000;

/**
 * A label name that would be a prototype accessor on a plain object; refused, so no code that
 * copies labels with `Object.assign` or `obj[name] = v` can change an object's prototype.
 */
export const FORBIDDEN_LABEL_NAME = '__proto__';

/**
 * Whether an event's time is within the window of its receipt (live services only: a recording is
 * replayed long after it happened). `undefined` when it is; otherwise the reason, for the dead letter.
 */
export function eventTimeProblem(ts: string, receivedAt: number): string | undefined {
  const at = Date.parse(ts);
  if (!Number.isFinite(at)) return `ts: expected an ISO-8601 timestamp, got ${JSON.stringify(ts)}`;
  if (at - receivedAt > MAX_EVENT_LEAD_MS) {
    return `ts: expected at most ${MAX_EVENT_LEAD_MS / 60_000} min after receipt (${new Date(receivedAt).toISOString()}), got ${ts}: the source's clock is ahead`;
  }
  if (receivedAt - at > MAX_EVENT_AGE_MS) {
    return `ts: expected at most ${MAX_EVENT_AGE_MS / 86_400_000} days before receipt (${new Date(receivedAt).toISOString()}), got ${ts}: the source's clock is behind`;
  }
  return undefined;
}
