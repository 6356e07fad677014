import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AdapterResult } from './adapter.ts';
import { ADAPTERS } from './adapters.ts';
import { isoDurationMs, toIsoUtc } from './times.ts';

const RECEIVED = '2026-11-30T12:00:00.000Z';
const load = (name: string): unknown => JSON.parse(readFileSync(new URL(`../../../test/fixtures/provider/${name}`, import.meta.url), 'utf8'));
const events = (result: AdapterResult) => {
  if (!result.ok) throw new Error(`${result.error.path}: ${result.error.message}`);
  return result.events;
};

describe('provider adapters over every fixture', () => {
  it('aws-imds scheduled events: a system reboot with its window in UTC', () => {
    expect(events(ADAPTERS['aws-imds'](load('aws-imds-scheduled-events.json'), { host: 'h1', receivedAt: RECEIVED }))).toEqual([
      {
        provider: 'aws-imds',
        event_id: 'instance-event-0d59937288b749b32',
        kind: 'reboot',
        status: 'scheduled',
        hosts: ['h1'],
        window_start: '2019-01-21T09:00:43.000Z',
        window_end: '2019-01-21T09:17:23.000Z',
        description: 'scheduled reboot',
        raw_id: 'instance-event-0d59937288b749b32',
      },
    ]);
  });

  it('aws-imds history: cancelled and completed', () => {
    const out = events(ADAPTERS['aws-imds'](load('aws-imds-maintenance-history.json'), { host: 'h1', receivedAt: RECEIVED }));
    expect(out.map((e) => [e.status, e.window_start])).toEqual([
      ['cancelled', '2019-01-21T09:00:43.000Z'],
      ['completed', '2019-01-29T09:00:43.000Z'],
    ]);
  });

  it('aws-imds spot instance-action and rebalance notice', () => {
    const spot = events(ADAPTERS['aws-imds'](load('aws-imds-spot-instance-action.json'), { host: 'h1', receivedAt: RECEIVED }));
    expect(spot[0]).toMatchObject({ kind: 'preemption', status: 'scheduled', hosts: ['h1'], window_start: '2017-09-18T08:22:00.000Z' });
    const rebalance = events(ADAPTERS['aws-imds'](load('aws-imds-rebalance-recommendation.json'), { host: 'h1', receivedAt: RECEIVED }));
    expect(rebalance[0]).toMatchObject({ kind: 'rebalance', status: 'scheduled', hosts: ['h1'] });
    // the same notice twice has the same id, so a redelivery is recognised
    expect(events(ADAPTERS['aws-imds'](load('aws-imds-rebalance-recommendation.json'), { host: 'h1', receivedAt: RECEIVED }))[0]!.event_id).toBe(
      rebalance[0]!.event_id,
    );
  });

  it('aws EventBridge: spot interruption two minutes after its time, rebalance, both by instance id', () => {
    const spot = events(ADAPTERS.aws(load('aws-eventbridge-spot-interruption-warning.json'), { receivedAt: RECEIVED }));
    expect(spot).toEqual([
      {
        provider: 'aws',
        event_id: '12345678-1234-1234-1234-123456789012',
        kind: 'preemption',
        status: 'scheduled',
        hosts: ['i-1234567890abcdef0'],
        // the documentation's placeholder time falls back to when it was received
        window_start: '2026-11-30T12:02:00.000Z',
        description: 'EC2 spot interruption (action) in about two minutes',
        raw_id: '12345678-1234-1234-1234-123456789012',
      },
    ]);
    const rebalance = events(ADAPTERS.aws(load('aws-eventbridge-rebalance-recommendation.json'), { receivedAt: RECEIVED }));
    expect(rebalance[0]).toMatchObject({ kind: 'rebalance', hosts: ['i-1234567890abcdef0'] });
  });

  it('aws Health as AWS documents it: entities that are not instance ids are the hosts, and the event says so', () => {
    const result = ADAPTERS.aws(load('aws-health-issue-entities-not-instance-ids.json'), { receivedAt: RECEIVED });
    const [health] = events(result);
    expect(health).toMatchObject({
      kind: 'maintenance',
      status: 'started',
      window_start: '2023-01-27T13:19:03.000Z',
      hosts: ['arn:ec2-1-101002929', 'arn:ec2-1-101002930', 'arn:ec2-1-101002931', 'arn:ec2-1-101002932'],
    });
    expect(health!.description).toMatch(/not EC2 instance ids, taken as hosts as named: arn:ec2-1-101002929, arn:ec2-1-101002930/);
    expect(result.ok && result.warnings).toBeFalsy();
  });

  it('aws Health naming nobody (an account-wide notice) still flows, with a warning that says why', () => {
    const payload = load('aws-health-issue-entities-not-instance-ids.json') as { resources: unknown[]; detail: Record<string, unknown> };
    payload.resources = [];
    payload.detail.affectedEntities = [{ entityValue: 'AWS_ACCOUNT' }];
    const result = ADAPTERS.aws(payload, { receivedAt: RECEIVED });
    expect(events(result)[0]!.hosts).toEqual([]);
    expect(result.ok && result.warnings).toEqual([expect.stringMatching(/^aws event arn:aws:health:.* names no host: .* pages nobody$/)]);
  });

  it('aws-imds: one scheduled event given as an object, not a list, is the same event', () => {
    const [listed] = load('aws-imds-scheduled-events.json') as unknown[];
    expect(events(ADAPTERS['aws-imds'](listed, { host: 'h1', receivedAt: RECEIVED }))).toEqual(
      events(ADAPTERS['aws-imds'](load('aws-imds-scheduled-events.json'), { host: 'h1', receivedAt: RECEIVED })),
    );
  });

  it('generic: a window that ends before it starts, or lasts 1e308 seconds, is refused naming the field', () => {
    const base = { event_id: 'g1', kind: 'maintenance', status: 'scheduled', hosts: ['h1'] };
    expect(ADAPTERS.generic({ ...base, window_start: '2026-12-01T00:00:00Z', window_end: '1970-01-01T00:00:00Z' }, { receivedAt: RECEIVED })).toMatchObject({
      ok: false,
      error: { path: 'window_end', message: 'expected window_end at or after window_start' },
    });
    expect(ADAPTERS.generic({ ...base, window_start: '2026-12-01T00:00:00Z', duration_seconds: 1e308 }, { receivedAt: RECEIVED })).toMatchObject({
      ok: false,
      error: { path: 'duration_seconds' },
    });
    expect(ADAPTERS.generic({ ...base, window_start: '2026-12-01T00:00:00Z', duration_seconds: 3600 }, { receivedAt: RECEIVED })).toMatchObject({ ok: true });
  });

  it('event codes that are prototype keys are unknown codes, not functions', () => {
    for (const code of ['constructor', '__proto__', 'toString']) {
      const imds = ADAPTERS['aws-imds']([{ EventId: 'e1', Code: code }], { host: 'h1', receivedAt: RECEIVED });
      expect(imds).toMatchObject({ ok: false, error: { path: '.0.Code' } });
      const azure = ADAPTERS.azure(
        { DocumentIncarnation: 1, Events: [{ EventId: 'e1', EventType: code, Resources: ['vm1'], EventStatus: 'Scheduled' }] },
        { host: 'vm1', receivedAt: RECEIVED },
      );
      expect(azure.ok).toBe(false);
    }
  });

  it('aws Health scheduled change: RFC 1123 start, affected instance, ARN + account as id', () => {
    const [health] = events(ADAPTERS.aws(load('aws-health-scheduled-change-nth.json'), { receivedAt: RECEIVED }));
    expect(health).toMatchObject({
      kind: 'maintenance',
      status: 'scheduled',
      hosts: ['i-12345678'],
      window_start: '2016-06-05T15:10:09.000Z',
      event_id: 'arn:aws:health:region::event/id|account id',
    });
    expect(health!.description).toMatch(/^AWS_EC2_DEDICATED_HOST_NETWORK_MAINTENANCE_SCHEDULED: A description/);
  });

  it('aws DescribeInstanceStatus events', () => {
    const [reboot] = events(ADAPTERS.aws(load('aws-ec2-describe-instance-status-events.json'), { host: 'h2', receivedAt: RECEIVED }));
    expect(reboot).toMatchObject({ kind: 'reboot', hosts: ['h2'], window_start: '2019-03-14T20:00:00.000Z', window_end: '2019-03-15T22:00:00.000Z' });
  });

  it('azure: scheduled freeze with its window computed from the duration, started, empty, ack body', () => {
    const [scheduled] = events(ADAPTERS.azure(load('azure-scheduled-events-freeze-scheduled.json'), { receivedAt: RECEIVED }));
    expect(scheduled).toEqual({
      provider: 'azure',
      event_id: 'c7061bac-afdc-4513-b24b-aa5f13a16123',
      kind: 'migration',
      status: 'scheduled',
      hosts: ['WestNO_0', 'WestNO_1'],
      window_start: '2026-04-11T22:26:58.000Z',
      window_end: '2026-04-11T22:27:03.000Z',
      description: 'Azure Freeze: Virtual machine is being paused because of a memory-preserving Live Migration operation.',
      raw_id: '2',
    });
    const [started] = events(ADAPTERS.azure(load('azure-scheduled-events-freeze-started.json'), { receivedAt: RECEIVED }));
    expect(started).toMatchObject({ status: 'started', event_id: scheduled!.event_id, window_start: RECEIVED, window_end: '2026-11-30T12:00:05.000Z' });
    expect(events(ADAPTERS.azure(load('azure-scheduled-events-empty.json'), { receivedAt: RECEIVED }))).toEqual([]);
    expect(events(ADAPTERS.azure(load('azure-scheduled-events-ack-request.json'), { receivedAt: RECEIVED }))).toEqual([]);
  });

  it('gcp: the metadata document and the instances API, host + window start as the id', () => {
    const [metadata] = events(ADAPTERS.gcp(load('gcp-upcoming-maintenance-metadata.json'), { host: 'gpu-node-07', receivedAt: RECEIVED }));
    expect(metadata).toMatchObject({
      kind: 'maintenance',
      status: 'scheduled',
      hosts: ['gpu-node-07'],
      window_start: '2024-12-01T19:00:01.000Z',
      window_end: '2024-12-01T21:00:01.000Z',
      description: 'GCP scheduled maintenance (PLANNED_UPDATE, PLANNED_NETWORK_UPDATE)',
    });
    const [api] = events(ADAPTERS.gcp(load('gcp-instances-list-upcomingMaintenance.json'), { receivedAt: RECEIVED }));
    expect(api).toMatchObject({ hosts: ['vm-01'], window_start: '2024-11-01T19:00:00.000Z', window_end: '2024-11-01T22:00:00.000Z' });
    expect(events(ADAPTERS.gcp({}, { host: 'h', receivedAt: RECEIVED }))).toEqual([]);
    expect(events(ADAPTERS.gcp('TERMINATE_ON_HOST_MAINTENANCE', { host: 'h', receivedAt: RECEIVED }))[0]).toMatchObject({
      kind: 'terminate',
      status: 'started',
    });
  });

  it('oci: the window ends after the start window and the estimated duration (P1D + P5D)', () => {
    const [oci] = events(ADAPTERS.oci(load('oci-instance-maintenance-scheduled.json'), { receivedAt: RECEIVED }));
    expect(oci).toMatchObject({
      kind: 'maintenance',
      status: 'scheduled',
      hosts: ['ocid1.instance.oc1.phx.<unique_ID>'],
      window_start: '2023-09-18T12:00:00.000Z',
      window_end: '2023-09-24T12:00:00.000Z',
      event_id: 'ocid1.instancemaintenanceevent.oc1.phx.unique_ID',
      raw_id: 'unique_ID',
    });
  });

  it('generic: our own format, with a duration', () => {
    const out = events(
      ADAPTERS.generic(
        {
          event_id: 'dc-42',
          kind: 'reboot',
          status: 'scheduled',
          hosts: ['rack3-node1'],
          window_start: '2026-12-01T02:00:00+01:00',
          duration_seconds: 1800,
          description: 'firmware update',
        },
        { receivedAt: RECEIVED },
      ),
    );
    expect(out).toEqual([
      {
        provider: 'generic',
        event_id: 'dc-42',
        kind: 'reboot',
        status: 'scheduled',
        hosts: ['rack3-node1'],
        window_start: '2026-12-01T01:00:00.000Z',
        window_end: '2026-12-01T01:30:00.000Z',
        description: 'firmware update',
        raw_id: 'dc-42',
      },
    ]);
  });

  it('names the field of a payload it does not recognise', () => {
    const bad = ADAPTERS.generic({ event_id: 'x', kind: 'explode', status: 'scheduled', hosts: ['h'] }, { receivedAt: RECEIVED });
    expect(bad).toMatchObject({ ok: false, error: { path: 'kind' } });
    expect(ADAPTERS.azure({ Events: [{ EventId: 'e', EventType: 'Dance' }] }, { receivedAt: RECEIVED })).toMatchObject({
      ok: false,
      error: { path: 'Events.0.EventType' },
    });
    expect(ADAPTERS.aws({ 'detail-type': 'Something Else', detail: {} }, { receivedAt: RECEIVED })).toMatchObject({
      ok: false,
      error: { path: 'detail-type' },
    });
    expect(ADAPTERS['aws-imds']([], { receivedAt: RECEIVED })).toMatchObject({ ok: false, error: { message: expect.stringContaining('--host') } });
  });
});

describe('time formats', () => {
  it('normalises every provider format to ISO-8601 UTC', () => {
    expect(toIsoUtc('21 Jan 2019 09:00:43 GMT')).toBe('2019-01-21T09:00:43.000Z');
    expect(toIsoUtc('Mon, 11 Apr 2026 22:26:58 GMT')).toBe('2026-04-11T22:26:58.000Z');
    expect(toIsoUtc('2024-12-01T19:00:01-08:00')).toBe('2024-12-02T03:00:01.000Z');
    expect(toIsoUtc('2024-12-01T19:00:01+0530')).toBe('2024-12-01T13:30:01.000Z');
    expect(toIsoUtc('yyyy-mm-ddThh:mm:ssZ')).toBeUndefined();
    expect(toIsoUtc('')).toBeUndefined();
    expect(isoDurationMs('P1D')).toBe(86_400_000);
    expect(isoDurationMs('PT2H30M')).toBe(9_000_000);
    expect(isoDurationMs('P')).toBeUndefined();
  });
});
