import {
  isHostName,
  MAX_LABEL_NAME_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
  MAX_LABELS,
  MINUTES_PER_HOUR,
  toInertRecord,
  validateEnvelope,
  type EnvelopeOf,
} from '@gpualert/schema';

export type RollupRead =
  | { readonly ok: true; readonly rollup: EnvelopeOf<'usage.rollup'> }
  | { readonly ok: false; readonly reason: string }
  | { readonly ok: 'other'; readonly type: string; readonly json: unknown };

const STATES = ['up', 'busy', 'idle', 'broken', 'maintenance'] as const;

/**
 * One line of a recording or one message of `gpualert.usage` as a rollup. A month of a fleet is
 * most of a million of them: a structural check of the fields a report reads stands in for the
 * full schema, which still words the reason for anything that fails it. Envelopes of other types
 * answer `other` (a recording holds samples and alerts too).
 */
export function readRollup(text: string): RollupRead {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return { ok: false, reason: 'not a JSON object' };
  const e = json as { type?: unknown; id?: unknown; ts?: unknown; host?: unknown; labels?: unknown; source?: unknown; data?: unknown };
  if (e.type !== 'usage.rollup') return typeof e.type === 'string' ? { ok: 'other', type: e.type, json } : { ok: false, reason: 'type: expected a string' };
  if (plainRollup(e)) return { ok: true, rollup: { ...(e as EnvelopeOf<'usage.rollup'>), labels: toInertRecord(e.labels as Record<string, string>) } };
  const validated = validateEnvelope(json);
  if (validated.ok && validated.value.type === 'usage.rollup') return { ok: true, rollup: validated.value };
  return { ok: false, reason: validated.ok ? 'not a usage.rollup' : validated.error.message };
}

function plainRollup(e: { id?: unknown; ts?: unknown; host?: unknown; labels?: unknown; source?: unknown; data?: unknown }): boolean {
  if (typeof e.id !== 'string' || typeof e.ts !== 'string' || typeof e.source !== 'string' || !isHostName(e.host)) return false;
  if (typeof e.labels !== 'object' || e.labels === null || Array.isArray(e.labels)) return false;
  const labels = Object.entries(e.labels);
  if (
    labels.length > MAX_LABELS ||
    labels.some(
      ([k, v]) => k === '__proto__' || k.length === 0 || k.length > MAX_LABEL_NAME_LENGTH || typeof v !== 'string' || v.length > MAX_LABEL_VALUE_LENGTH,
    )
  )
    return false;
  const d = e.data as {
    gpu?: unknown;
    hour?: unknown;
    minutes?: Record<string, unknown>;
    busy_threshold_pct?: unknown;
    evidence?: { alerts?: unknown; provider_events?: unknown };
  } | null;
  if (typeof d !== 'object' || d === null) return false;
  if (!Number.isInteger(d.gpu) || (d.gpu as number) < 0 || (d.gpu as number) > 255) return false;
  if (typeof d.hour !== 'string' || Date.parse(d.hour) % 3_600_000 !== 0) return false;
  if (typeof d.busy_threshold_pct !== 'number') return false;
  const m = d.minutes;
  if (typeof m !== 'object' || m === null) return false;
  for (const s of STATES) {
    const v = m[s];
    if (typeof v !== 'number' || !(v >= 0 && v <= MINUTES_PER_HOUR)) return false;
  }
  const sum = (m.busy as number) + (m.idle as number) + (m.broken as number) + (m.maintenance as number);
  if (Math.abs(sum - (m.up as number)) > 0.01) return false;
  const ev = d.evidence;
  return (
    typeof ev === 'object' &&
    ev !== null &&
    Array.isArray(ev.alerts) &&
    Array.isArray(ev.provider_events) &&
    ev.alerts.length <= 16 &&
    ev.provider_events.length <= 16 &&
    ev.alerts.every((a) => typeof a === 'string') &&
    ev.provider_events.every((a) => typeof a === 'string')
  );
}
