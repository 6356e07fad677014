import type { ProviderEventData } from '@gpualert/schema';
import { event, invalid, isRecord, ok, type ProviderAdapter } from './adapter.ts';
import { addMs, toIsoUtc } from './times.ts';

/** Keyed by what the provider sends: a Map, so `constructor` or `__proto__` finds nothing. */
const EVENT_TYPES: ReadonlyMap<string, ProviderEventData['kind']> = new Map<string, ProviderEventData['kind']>([
  ['Freeze', 'migration'],
  ['Reboot', 'reboot'],
  ['Redeploy', 'migration'],
  ['Preempt', 'preemption'],
  ['Terminate', 'terminate'],
]);

/**
 * Azure Scheduled Events: `{ DocumentIncarnation, Events[] }`. `NotBefore` is RFC 1123, or ""
 * once started; the window's end is `NotBefore + DurationInSeconds` where both are known.
 * `Resources` names the VMs affected (possibly others of the same set). The approval body
 * (`StartRequests`) we send back is recognised and yields nothing.
 */
export const azureAdapter: ProviderAdapter = (payload, context) => {
  if (!isRecord(payload)) return invalid('', 'expected a JSON object');
  if (Array.isArray(payload.StartRequests)) return ok([]);
  if (!Array.isArray(payload.Events)) return invalid('Events', 'expected the scheduled events array');
  const events: ProviderEventData[] = [];
  for (let i = 0; i < payload.Events.length; i += 1) {
    const item = payload.Events[i];
    if (!isRecord(item) || typeof item.EventId !== 'string') return invalid(`Events.${i}.EventId`, 'expected the event id');
    const type = String(item.EventType ?? '');
    const kind = EVENT_TYPES.get(type);
    if (!kind) return invalid(`Events.${i}.EventType`, `expected one of ${[...EVENT_TYPES.keys()].join(', ')} (got "${type}")`);
    const status = item.EventStatus === 'Started' ? 'started' : 'scheduled';
    const duration = typeof item.DurationInSeconds === 'number' && item.DurationInSeconds > 0 ? item.DurationInSeconds * 1000 : undefined;
    const start = toIsoUtc(item.NotBefore) ?? (status === 'started' ? context.receivedAt : undefined);
    const resources = Array.isArray(item.Resources) ? item.Resources.filter((r): r is string => typeof r === 'string') : [];
    const hosts = resources.length > 0 ? resources : context.host ? [context.host] : [];
    events.push(
      event({
        provider: 'azure',
        event_id: item.EventId.toLowerCase(),
        kind,
        status,
        hosts,
        window_start: start,
        window_end: addMs(start, duration),
        description: `Azure ${type}: ${String(item.Description ?? '')}`.trim(),
        raw_id: String(payload.DocumentIncarnation ?? item.EventId),
      }),
    );
  }
  return ok(events);
};
