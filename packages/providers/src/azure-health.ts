import type { ProviderEventData } from '@gpualert/schema';
import { event, invalid, isRecord, ok, type ProviderAdapter } from './adapter.ts';
import { toIsoUtc } from './times.ts';

/** A Service Health event lists its services and regions freely: bounded so one cannot fan out without end. */
export const MAX_AZURE_ALERT_TARGETS = 1_000;

/** The VM (or other resource) names an alert is about: `configurationItems`, else the last segment of each target id. */
function targets(essentials: Record<string, unknown>): string[] {
  const items = Array.isArray(essentials.configurationItems) ? essentials.configurationItems : [];
  const names = items.filter((i): i is string => typeof i === 'string' && i.trim() !== '').map((i) => i.trim());
  if (names.length > 0) return [...new Set(names)].slice(0, MAX_AZURE_ALERT_TARGETS);
  const ids = Array.isArray(essentials.alertTargetIDs) ? essentials.alertTargetIDs : [];
  // A target that is a whole subscription names no machine.
  const resources = ids
    .filter((i): i is string => typeof i === 'string' && /\/providers\//i.test(i))
    .map((i) => i.split('/').at(-1) ?? '')
    .filter((n) => n !== '');
  return [...new Set(resources)].slice(0, MAX_AZURE_ALERT_TARGETS);
}

/**
 * Azure Monitor action groups in the common alert schema (`azureMonitorCommonAlertSchema`):
 * Resource Health (a VM unavailable or degraded: `stop` or `maintenance`, started, then completed
 * when resolved or available again) and Service Health (planned maintenance and incidents,
 * which name services and regions rather than machines). Metric and log alerts are not
 * provider notices and are refused by name.
 */
export const azureHealthAdapter: ProviderAdapter = (payload) => {
  if (!isRecord(payload)) return invalid('', 'expected a JSON object');
  if (payload.schemaId !== 'azureMonitorCommonAlertSchema') {
    return invalid(
      'schemaId',
      `expected azureMonitorCommonAlertSchema (turn on "Enable the common alert schema" in the action group; got "${String(payload.schemaId).slice(0, 60)}")`,
    );
  }
  const data = isRecord(payload.data) ? payload.data : undefined;
  const essentials = data && isRecord(data.essentials) ? data.essentials : undefined;
  const context = data && isRecord(data.alertContext) ? data.alertContext : undefined;
  if (!essentials || !context) return invalid('data.essentials', 'expected the essentials and the alert context');
  if (typeof essentials.alertId !== 'string') return invalid('data.essentials.alertId', 'expected the alert id');
  const service = String(essentials.monitoringService ?? '');
  const properties = isRecord(context.properties) ? context.properties : {};
  const resolved = essentials.monitorCondition === 'Resolved' || context.status === 'Resolved';
  // Fired and resolved are one alert: its id, lower case as Azure compares resource ids.
  const id = essentials.alertId.toLowerCase();
  if (service === 'Resource Health' || context.eventSource === 'ResourceHealth') {
    const current = String(properties.currentHealthStatus ?? '');
    const kind: ProviderEventData['kind'] = current === 'Unavailable' ? 'stop' : 'maintenance';
    const status: ProviderEventData['status'] = resolved || current === 'Available' ? 'completed' : 'started';
    return ok([
      event({
        provider: 'azure',
        event_id: id,
        kind,
        status,
        hosts: targets(essentials),
        window_start: toIsoUtc(context.eventTimestamp) ?? toIsoUtc(essentials.firedDateTime),
        window_end: toIsoUtc(essentials.resolvedDateTime),
        description: `Azure Resource Health: ${String(properties.title ?? 'health event')} (${current || 'unknown'}${properties.cause ? `, ${String(properties.cause)}` : ''}${properties.type ? `, ${String(properties.type)}` : ''})`,
        raw_id: String(context.eventDataId ?? essentials.alertId),
      }),
    ]);
  }
  if (service === 'ServiceHealth' || context.eventSource === 'ServiceHealth') {
    const incidentType = String(properties.incidentType ?? 'Incident');
    const stage = String(properties.stage ?? '');
    const status: ProviderEventData['status'] = /cancel/i.test(stage)
      ? 'cancelled'
      : resolved || /resolved|complete/i.test(stage)
        ? 'completed'
        : incidentType === 'Maintenance' && /planned/i.test(stage)
          ? 'scheduled'
          : 'started';
    // One Service Health event keeps its tracking id through every update.
    const trackingId = typeof properties.trackingId === 'string' ? properties.trackingId : id;
    return ok([
      event({
        provider: 'azure',
        event_id: `servicehealth:${trackingId}`,
        kind: 'maintenance',
        status,
        hosts: targets(essentials),
        window_start: toIsoUtc(properties.impactStartTime),
        window_end: toIsoUtc(properties.impactMitigationTime),
        description: `Azure Service Health ${incidentType}: ${String(properties.title ?? properties.defaultLanguageTitle ?? trackingId)}`,
        raw_id: String(context.eventDataId ?? essentials.alertId),
      }),
    ]);
  }
  return invalid(
    'data.essentials.monitoringService',
    `expected ServiceHealth or Resource Health (got "${service.slice(0, 60)}"): metric and log alerts are not provider notices`,
  );
};
