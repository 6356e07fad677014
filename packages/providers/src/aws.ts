import { stableId, type ProviderEventData } from '@gpualert/schema';
import { event, invalid, isRecord, ok, type AdapterResult, type ProviderAdapter } from './adapter.ts';
import { addMs, toIsoUtc } from './times.ts';

type Kind = ProviderEventData['kind'];

/** AWS's scheduled-event codes (IMDS, DescribeInstanceStatus); a Map, so `constructor` finds nothing. */
const IMDS_CODES: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ['instance-reboot', 'reboot'],
  ['system-reboot', 'reboot'],
  ['system-maintenance', 'maintenance'],
  ['instance-retirement', 'retirement'],
  ['instance-stop', 'stop'],
]);

/** Spot interruptions come with about two minutes' notice. */
const SPOT_NOTICE_MS = 120_000;

function instanceOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return /instance\/(i-[0-9a-f]+)$/.exec(value)?.[1] ?? (/^i-[0-9a-f]+$/.test(value) ? value : undefined);
}

/** Entity values that name no resource of ours: the account itself, or nothing. */
const NOT_A_HOST = new Set(['AWS_ACCOUNT', 'UNKNOWN', '']);
/** A Health event names its entities freely: bounded so one event cannot fan out without end. */
export const MAX_HEALTH_ENTITIES = 10_000;

/**
 * The hosts an AWS Health event is about: its affected entities and resources. An instance id
 * (bare or in an ARN) is the instance; any other entity value (a Dedicated Host id, a name, the
 * placeholders of AWS's own documentation samples) is taken as the host as written, and listed in
 * `notInstances` so the event says so: an event about nobody would page nobody.
 */
function healthHosts(entities: unknown, resources: unknown): { hosts: string[]; notInstances: string[] } {
  const values = [
    ...(Array.isArray(entities) ? entities : []).map((e) => (isRecord(e) ? e.entityValue : undefined)),
    ...(Array.isArray(resources) ? resources : []),
  ].slice(0, MAX_HEALTH_ENTITIES);
  const hosts = new Set<string>();
  const notInstances = new Set<string>();
  for (const value of values) {
    if (typeof value !== 'string') continue;
    const instance = instanceOf(value);
    if (instance) hosts.add(instance);
    else if (!NOT_A_HOST.has(value.trim())) notInstances.add(value.trim());
  }
  // An ARN naming an instance and the bare id are one host; a value kept as written only when no instance id names it.
  for (const value of notInstances) hosts.add(value);
  return { hosts: [...hosts], notInstances: [...notInstances] };
}

/** A scheduled-events list (IMDS `…/maintenance/scheduled` and `/history`, or DescribeInstanceStatus `Events`). */
function scheduledEvents(provider: 'aws' | 'aws-imds', list: unknown[], path: string, host: string | undefined): AdapterResult {
  if (!host) return invalid(path, 'an on-instance event list needs the host it came from (--host)');
  const events: ProviderEventData[] = [];
  for (let i = 0; i < list.length; i += 1) {
    const item = list[i];
    if (!isRecord(item)) return invalid(`${path}.${i}`, 'expected an object');
    const id = item.EventId ?? item.InstanceEventId;
    if (typeof id !== 'string') return invalid(`${path}.${i}.EventId`, 'expected the event id');
    const code = String(item.Code ?? '');
    const kind = IMDS_CODES.get(code);
    if (!kind) return invalid(`${path}.${i}.Code`, `expected one of ${[...IMDS_CODES.keys()].join(', ')} (got "${code}")`);
    const state = String(item.State ?? 'active').toLowerCase();
    const status = state === 'completed' ? 'completed' : state === 'canceled' || state === 'cancelled' ? 'cancelled' : 'scheduled';
    events.push(
      event({
        provider,
        event_id: id,
        kind,
        status,
        hosts: [host],
        window_start: toIsoUtc(item.NotBefore),
        window_end: toIsoUtc(item.NotAfter),
        description: String(item.Description ?? code),
        raw_id: id,
      }),
    );
  }
  return ok(events);
}

/**
 * AWS through EventBridge: AWS Health scheduled changes and retirements, EC2 spot interruption
 * warnings and rebalance recommendations; also a DescribeInstanceStatus `Events` list.
 */
export const awsAdapter: ProviderAdapter = (payload, context) => {
  if (!isRecord(payload)) return invalid('', 'expected a JSON object');
  if (Array.isArray(payload.Events)) return scheduledEvents('aws', payload.Events, 'Events', context.host);
  const detailType = payload['detail-type'];
  if (typeof detailType !== 'string') return invalid('detail-type', 'expected an EventBridge event with "detail-type"');
  const detail = payload.detail;
  if (!isRecord(detail)) return invalid('detail', 'expected an object');
  const envelopeId = typeof payload.id === 'string' ? payload.id : undefined;
  // Documentation examples carry placeholders for `time`: fall back to when we received it.
  const time = toIsoUtc(payload.time) ?? context.receivedAt;
  if (detailType === 'EC2 Spot Instance Interruption Warning' || detailType === 'EC2 Instance Rebalance Recommendation') {
    const instance = instanceOf(detail['instance-id']) ?? instanceOf((payload.resources as unknown[] | undefined)?.[0]);
    if (!instance) return invalid('detail.instance-id', 'expected the instance id');
    const spot = detailType.startsWith('EC2 Spot');
    const id = envelopeId ?? stableId('aws', detailType, instance, time);
    return ok([
      event({
        provider: 'aws',
        event_id: id,
        kind: spot ? 'preemption' : 'rebalance',
        status: 'scheduled',
        hosts: [instance],
        window_start: spot ? addMs(time, SPOT_NOTICE_MS) : undefined,
        window_end: undefined,
        description: spot
          ? `EC2 spot interruption (${String(detail['instance-action'] ?? 'terminate')}) in about two minutes`
          : 'EC2 rebalance recommendation: this spot instance is at elevated risk of interruption',
        raw_id: id,
      }),
    ]);
  }
  if (detailType === 'AWS Health Event') {
    const arn = detail.eventArn;
    if (typeof arn !== 'string') return invalid('detail.eventArn', 'expected the event ARN');
    const code = String(detail.eventTypeCode ?? '');
    const kind: Kind = /RETIRE/.test(code) ? 'retirement' : /REBOOT/.test(code) ? 'reboot' : /STOP/.test(code) ? 'stop' : 'maintenance';
    const statusCode = String(detail.statusCode ?? 'upcoming');
    const status = statusCode === 'closed' ? 'completed' : statusCode === 'open' && detail.eventTypeCategory !== 'scheduledChange' ? 'started' : 'scheduled';
    const { hosts, notInstances } = healthHosts(detail.affectedEntities, payload.resources);
    const latest =
      Array.isArray(detail.eventDescription) && isRecord(detail.eventDescription[0]) ? String(detail.eventDescription[0].latestDescription ?? code) : code;
    const description = notInstances.length > 0 ? `${latest} (not EC2 instance ids, taken as hosts as named: ${notInstances.join(', ')})` : latest;
    // One Health event may reach us once per account and page: the ARN with the account is its identity.
    const id = `${arn}|${String(payload.account ?? '')}`;
    return ok([
      event({
        provider: 'aws',
        event_id: id,
        kind,
        status,
        hosts,
        window_start: toIsoUtc(detail.startTime),
        window_end: toIsoUtc(detail.endTime),
        description: `${code}: ${description}`,
        raw_id: envelopeId ?? arn,
      }),
    ]);
  }
  return invalid('detail-type', `expected an EC2 spot, rebalance or AWS Health event (got "${detailType}")`);
};

/** AWS instance metadata: scheduled events and their history, spot instance-action, rebalance notice. */
export const awsImdsAdapter: ProviderAdapter = (payload, context) => {
  if (Array.isArray(payload)) return scheduledEvents('aws-imds', payload, '', context.host);
  if (!isRecord(payload)) return invalid('', 'expected a JSON array of scheduled events or an object');
  // One scheduled event on its own, as AWS's documentation shows it, is a list of one.
  if (typeof payload.EventId === 'string' && typeof payload.Code === 'string') return scheduledEvents('aws-imds', [payload], '', context.host);
  if (!context.host) return invalid('', 'an on-instance document needs the host it came from (--host)');
  if (typeof payload.action === 'string') {
    const time = toIsoUtc(payload.time);
    if (!time) return invalid('time', 'expected the interruption time (ISO-8601)');
    const id = stableId('aws-imds', 'spot', context.host, time);
    return ok([
      event({
        provider: 'aws-imds',
        event_id: id,
        kind: payload.action === 'stop' || payload.action === 'hibernate' ? 'stop' : 'preemption',
        status: 'scheduled',
        hosts: [context.host],
        window_start: time,
        window_end: undefined,
        description: `EC2 spot instance-action: ${payload.action} at ${time}`,
        raw_id: id,
      }),
    ]);
  }
  if (typeof payload.noticeTime === 'string') {
    const time = toIsoUtc(payload.noticeTime);
    if (!time) return invalid('noticeTime', 'expected ISO-8601');
    const id = stableId('aws-imds', 'rebalance', context.host, time);
    return ok([
      event({
        provider: 'aws-imds',
        event_id: id,
        kind: 'rebalance',
        status: 'scheduled',
        hosts: [context.host],
        window_start: undefined,
        window_end: undefined,
        description: `EC2 rebalance recommendation at ${time}: elevated risk of spot interruption`,
        raw_id: id,
      }),
    ]);
  }
  if (Array.isArray(payload.Events)) return scheduledEvents('aws-imds', payload.Events, 'Events', context.host);
  return invalid('', 'expected scheduled events, a spot instance-action or a rebalance notice');
};
