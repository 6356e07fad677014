import type { ProviderEventData } from '@gpualert/schema';
import { event, invalid, isRecord, ok, type ProviderAdapter } from './adapter.ts';
import { addMs, isoDurationMs, toIsoUtc } from './times.ts';

const PREFIX = 'com.oraclecloud.computeapi.instancemaintenance';

/**
 * OCI instance maintenance events (`…instancemaintenance`, `.begin`, `.end`). The window runs
 * from `timeWindowStart` through the start window (`startWindowDuration`) plus the estimated
 * duration, both ISO-8601 durations. `REBOOT_MIGRATE` and `REBOOT_MIGRATION` both occur.
 */
export const ociAdapter: ProviderAdapter = (payload) => {
  if (!isRecord(payload)) return invalid('', 'expected a JSON object');
  const type = payload.eventType;
  if (typeof type !== 'string' || !type.startsWith(PREFIX)) return invalid('eventType', `expected ${PREFIX}[.begin|.end]`);
  if (typeof payload.eventID !== 'string') return invalid('eventID', 'expected the event id');
  const data = isRecord(payload.data) ? payload.data : undefined;
  const details = data && isRecord(data.additionalDetails) ? data.additionalDetails : undefined;
  if (!data || !details) return invalid('data.additionalDetails', 'expected the maintenance details');
  const instance = details.instanceId;
  if (typeof instance !== 'string') return invalid('data.additionalDetails.instanceId', 'expected the instance OCID');
  const lifecycle = String(details.lifecycleState ?? '');
  const status: ProviderEventData['status'] = type.endsWith('.end')
    ? 'completed'
    : type.endsWith('.begin')
      ? 'started'
      : /CANCEL/.test(lifecycle)
        ? 'cancelled'
        : /SUCCEEDED|COMPLETED/.test(lifecycle)
          ? 'completed'
          : /STARTED|PROCESSING|IN_PROGRESS/.test(lifecycle)
            ? 'started'
            : 'scheduled';
  const actions = [details.instanceAction, ...(Array.isArray(details.alternativeResolutionActions) ? details.alternativeResolutionActions : [])].map(String);
  const kind: ProviderEventData['kind'] =
    actions.some((a) => /^REBOOT_MIGRAT/.test(a)) && actions[0] !== 'None'
      ? 'migration'
      : actions[0] === 'TERMINATE'
        ? 'terminate'
        : actions[0] === 'STOP'
          ? 'stop'
          : actions[0] === 'REBOOT'
            ? 'reboot'
            : 'maintenance';
  const start = toIsoUtc(details.timeWindowStart);
  const span = (isoDurationMs(details.startWindowDuration) ?? 0) + (isoDurationMs(details.estimatedDuration) ?? 0);
  // One maintenance has one id across its scheduled, begin and end events: the maintenance resource.
  const id = typeof data.resourceId === 'string' ? data.resourceId : payload.eventID;
  return ok([
    event({
      provider: 'oci',
      event_id: id,
      kind,
      status,
      hosts: [instance],
      window_start: start,
      window_end: span > 0 ? addMs(start, span) : undefined,
      description: `OCI ${String(details.maintenanceReason ?? 'maintenance')
        .toLowerCase()
        .replace(/_/g, ' ')}: ${String(details.description ?? '')}`.trim(),
      raw_id: payload.eventID,
    }),
  ]);
};
