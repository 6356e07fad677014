import { stableId, type ProviderEventData } from '@gpualert/schema';
import { event, invalid, isRecord, ok, type ProviderAdapter } from './adapter.ts';
import { toIsoUtc } from './times.ts';

/** Keyed by what the provider sends: a Map, so `constructor` or `__proto__` finds nothing. */
const MAINTENANCE_EVENT: ReadonlyMap<string, ProviderEventData['kind']> = new Map<string, ProviderEventData['kind']>([
  ['MIGRATE_ON_HOST_MAINTENANCE', 'migration'],
  ['TERMINATE_ON_HOST_MAINTENANCE', 'terminate'],
]);

function upcoming(doc: Record<string, unknown>, host: string, path: string) {
  // The metadata server writes snake_case, the instances API camelCase.
  const field = (snake: string, camel: string) => doc[snake] ?? doc[camel];
  const start = toIsoUtc(field('window_start_time', 'windowStartTime'));
  const end = toIsoUtc(field('window_end_time', 'windowEndTime'));
  if (!start) return invalid(`${path}window_start_time`, 'expected the window start (RFC 3339)');
  const status = String(field('maintenance_status', 'maintenanceStatus') ?? 'PENDING');
  const reasons = field('maintenance_reasons', 'maintenanceReasons');
  // GCP gives no id: the host and the window start identify an upcoming maintenance.
  const id = stableId('gcp', host, start);
  return event({
    provider: 'gcp',
    event_id: id,
    kind: 'maintenance',
    status: status === 'ONGOING' ? 'started' : 'scheduled',
    hosts: [host],
    window_start: start,
    window_end: end,
    description: `GCP ${String(field('type', 'type') ?? 'SCHEDULED').toLowerCase()} maintenance${Array.isArray(reasons) ? ` (${reasons.join(', ')})` : ''}`,
    raw_id: id,
  });
}

/** Compute Engine system events in the audit log (Cloud Logging → Pub/Sub): a Map, so `constructor` finds nothing. */
const SYSTEM_EVENTS: ReadonlyMap<string, ProviderEventData['kind']> = new Map<string, ProviderEventData['kind']>([
  ['compute.instances.migrateOnHostMaintenance', 'migration'],
  ['compute.instances.terminateOnHostMaintenance', 'terminate'],
  ['compute.instances.hostError', 'reboot'],
  ['compute.instances.automaticRestart', 'reboot'],
  ['compute.instances.preempted', 'preemption'],
  ['compute.instances.upcomingMaintenance', 'maintenance'],
]);

/**
 * A Cloud Logging entry of a Compute Engine system event, as a log sink publishes it to Pub/Sub:
 * the instance is the last segment of `protoPayload.resourceName`; the operation id ties its
 * first and last entries (started, completed).
 */
function systemEvent(entry: Record<string, unknown>, proto: Record<string, unknown>) {
  const method = String(proto.methodName ?? '');
  const kind = SYSTEM_EVENTS.get(method);
  if (!kind) return invalid('protoPayload.methodName', `expected one of ${[...SYSTEM_EVENTS.keys()].join(', ')} (got "${method.slice(0, 80)}")`);
  const resource = typeof proto.resourceName === 'string' ? proto.resourceName : '';
  const instance = /\/instances\/([^/]+)$/.exec(resource)?.[1];
  if (!instance) return invalid('protoPayload.resourceName', 'expected projects/…/zones/…/instances/NAME');
  const operation = isRecord(entry.operation) ? entry.operation : {};
  const id = typeof operation.id === 'string' ? operation.id : typeof entry.insertId === 'string' ? entry.insertId : undefined;
  if (!id) return invalid('insertId', 'expected the log entry id');
  const time = toIsoUtc(entry.timestamp);
  return ok([
    event({
      provider: 'gcp',
      event_id: `${method}:${id}`,
      kind,
      status: operation.last === true ? 'completed' : 'started',
      hosts: [instance],
      window_start: time,
      window_end: undefined,
      description: `GCP ${method.replace('compute.instances.', '')}: ${String(proto.resourceName)}`,
      raw_id: typeof entry.insertId === 'string' ? entry.insertId : id,
    }),
  ]);
}

/**
 * GCP: Compute Engine system events from Cloud Logging, the metadata server's `instance/upcoming-maintenance` document (`{}` when nothing is
 * pending) and `instance/maintenance-event` text, and the instances API's `upcomingMaintenance`.
 */
export const gcpAdapter: ProviderAdapter = (payload, context) => {
  if (typeof payload === 'string' || (isRecord(payload) && typeof payload.maintenance_event === 'string')) {
    const value = (typeof payload === 'string' ? payload : String((payload as Record<string, unknown>).maintenance_event)).trim();
    if (value === 'NONE') return ok([]);
    const kind = MAINTENANCE_EVENT.get(value);
    if (!kind) return invalid('maintenance_event', `expected NONE, MIGRATE_ON_HOST_MAINTENANCE or TERMINATE_ON_HOST_MAINTENANCE (got "${value}")`);
    if (!context.host) return invalid('', 'an on-instance maintenance event needs the host it came from (--host)');
    const id = stableId('gcp', 'maintenance-event', context.host, value, context.receivedAt.slice(0, 13));
    return ok([
      event({
        provider: 'gcp',
        event_id: id,
        kind,
        status: 'started',
        hosts: [context.host],
        window_start: context.receivedAt,
        window_end: undefined,
        description: `GCP host maintenance: ${value}`,
        raw_id: id,
      }),
    ]);
  }
  if (!isRecord(payload)) return invalid('', 'expected a JSON object');
  if (isRecord(payload.protoPayload)) return systemEvent(payload, payload.protoPayload);
  if (Array.isArray(payload.items)) {
    const events: ProviderEventData[] = [];
    for (let i = 0; i < payload.items.length; i += 1) {
      const item = payload.items[i];
      if (!isRecord(item) || typeof item.name !== 'string') return invalid(`items.${i}.name`, 'expected the instance name');
      const maintenance = isRecord(item.resourceStatus) ? item.resourceStatus.upcomingMaintenance : undefined;
      if (!isRecord(maintenance)) continue;
      const result = upcoming(maintenance, item.name, `items.${i}.resourceStatus.upcomingMaintenance.`);
      if ('ok' in result) return result;
      events.push(result);
    }
    return ok(events);
  }
  if (Object.keys(payload).length === 0) return ok([]); // nothing pending
  if (!context.host) return invalid('', 'an on-instance document needs the host it came from (--host)');
  const result = upcoming(payload, context.host, '');
  return 'ok' in result ? result : ok([result]);
};
