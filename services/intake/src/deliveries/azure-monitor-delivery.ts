import { azureHealthAdapter } from '@gpualert/providers';
import { checkToken, isRecord, parseJson, unauthorized, type ProtocolDeps, type ProtocolOutcome, type ProtocolRequest } from './delivery-protocol.ts';

/**
 * Azure Monitor action groups (webhook action, common alert schema on): Service Health and
 * Resource Health alerts, with our token in the webhook URL's `token` parameter. The alert id
 * and its condition (Fired, Resolved) identify the delivery: the action group retries with both
 * unchanged.
 */
export function azureMonitorDelivery(request: ProtocolRequest, deps: ProtocolDeps): ProtocolOutcome {
  const denied = checkToken(request, deps);
  if (denied) return unauthorized(denied);
  const parsed = parseJson(request.body);
  if (!parsed.ok) return parsed.outcome;
  const data = isRecord(parsed.value) && isRecord(parsed.value.data) ? parsed.value.data : undefined;
  const essentials = data && isRecord(data.essentials) ? data.essentials : {};
  const deliveryId = `azure-monitor:${String(essentials.alertId ?? '')}:${String(essentials.monitorCondition ?? '')}`;
  return { verified: { provider: 'azure', payloads: [parsed.value], deliveryId, adapter: azureHealthAdapter } };
}
