import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { azureHealthAdapter } from './azure-health.ts';
import { detectProvider } from './detect-provider.ts';
import { ADAPTERS } from './adapters.ts';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../../test/fixtures/provider/${name}`, import.meta.url), 'utf8')) as unknown;
const context = { receivedAt: '2026-11-30T00:00:00.000Z' };

describe('Azure Monitor common alert schema (Service Health, Resource Health)', () => {
  it('reads the published Resource Health alert as the VM going down, started', () => {
    const result = azureHealthAdapter(fixture('deliveries/azure-monitor-resource-health.json'), context);
    expect(result).toMatchObject({
      ok: true,
      events: [{ provider: 'azure', kind: 'stop', status: 'started', hosts: ['test-VM'], window_start: '2021-11-16T09:50:20.406Z' }],
    });
  });

  it('reads the published Service Health alert by its tracking id, resolved, naming no machine', () => {
    const result = azureHealthAdapter(fixture('deliveries/azure-monitor-service-health.json'), context);
    expect(result).toMatchObject({
      ok: true,
      events: [{ event_id: 'servicehealth:ABC1-DEF', kind: 'maintenance', status: 'completed', hosts: [], window_end: '2021-11-17T01:00:00.000Z' }],
    });
  });

  it('refuses the older activity-log schema and metric alerts, naming the field', () => {
    expect(azureHealthAdapter({ schemaId: 'Microsoft.Insights/activityLogs', data: {} }, context)).toMatchObject({ ok: false, error: { path: 'schemaId' } });
  });
});

describe('GCP system events from Cloud Logging', () => {
  it('reads a migrateOnHostMaintenance entry as a migration of the instance it names', () => {
    const result = ADAPTERS.gcp(fixture('deliveries/gcp-logging-migrate-on-host-maintenance.json'), context);
    expect(result).toMatchObject({ ok: true, events: [{ kind: 'migration', status: 'started', hosts: ['gpu-node-17'] }] });
  });
});

describe('detectProvider', () => {
  it("tells each provider's event by its own fields", () => {
    expect(detectProvider(fixture('aws-eventbridge-spot-interruption-warning.json'))).toBe('aws');
    expect(detectProvider(fixture('deliveries/azure-monitor-resource-health.json'))).toBe('azure-health');
    expect(detectProvider(fixture('oci-instance-maintenance-scheduled.json'))).toBe('oci');
    expect(detectProvider(fixture('deliveries/gcp-logging-migrate-on-host-maintenance.json'))).toBe('gcp');
    expect(detectProvider(fixture('azure-scheduled-events-freeze-scheduled.json'))).toBe('azure');
    expect(detectProvider({ constructor: 1 })).toBe('generic');
  });
});
