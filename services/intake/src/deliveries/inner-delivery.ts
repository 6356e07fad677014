import { azureHealthAdapter, detectProvider } from '@gpualert/providers';
import { refuse, type ProtocolOutcome } from './delivery-protocol.ts';

/**
 * Payloads that arrived inside a protocol's envelope, handed on to the adapter of the provider
 * that wrote them; one delivery holds one provider's events.
 */
export function innerDelivery(protocol: string, payloads: readonly unknown[], messageId: string): ProtocolOutcome {
  const detected = payloads.map(detectProvider);
  const [provider] = detected;
  // Each protocol refuses an empty batch before it gets here.
  if (provider === undefined) return refuse(400, 'malformed', 'no_events', 'the delivery holds no events');
  if (detected.some((p) => p !== provider))
    return refuse(422, 'unrecognised', 'mixed_providers', 'one delivery mixes events of several providers; send them apart');
  const deliveryId = `${protocol}:${messageId}`;
  if (provider === 'azure-health') return { verified: { provider: 'azure', payloads, deliveryId, adapter: azureHealthAdapter } };
  return { verified: { provider, payloads, deliveryId } };
}
