import type { Provider } from '@gpualert/schema';
import { isRecord } from './adapter.ts';

/**
 * Which provider wrote an event that arrives inside someone else's envelope (a CloudEvent's
 * data, a Pub/Sub message): by the fields only that provider writes. `azure-health` is Azure
 * Monitor's common alert schema; anything else is taken as a generic event.
 */
export function detectProvider(payload: unknown): Provider | 'azure-health' {
  if (!isRecord(payload)) return 'generic';
  if (typeof payload['detail-type'] === 'string') return 'aws';
  if (payload.schemaId === 'azureMonitorCommonAlertSchema') return 'azure-health';
  if (Array.isArray(payload.Events) && 'DocumentIncarnation' in payload) return 'azure';
  if (typeof payload.eventType === 'string' && payload.eventType.startsWith('com.oraclecloud.')) return 'oci';
  if (isRecord(payload.protoPayload) || 'upcomingMaintenance' in payload || Array.isArray(payload.items)) return 'gcp';
  return 'generic';
}
