import { acceptPayloads, answer, type IntakeResponse } from '../handle-delivery.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../json-depth.ts';
import { azureMonitorDelivery } from './azure-monitor-delivery.ts';
import { cloudEventsDelivery, cloudEventsHandshake } from './cloudevents-delivery.ts';
import type { DeliveryProtocol, ProtocolDeps, ProtocolOutcome, ProtocolRequest } from './delivery-protocol.ts';
import { eventGridDelivery } from './eventgrid-delivery.ts';
import { ociDelivery } from './oci-delivery.ts';
import { pubsubDelivery } from './pubsub-delivery.ts';
import { snsDelivery } from './sns-delivery.ts';

/** What each route takes besides POST: the CloudEvents handshake where Event Grid may use it. */
export const PROTOCOL_METHODS: Readonly<Record<DeliveryProtocol, readonly string[]>> = {
  sns: ['POST'],
  eventgrid: ['POST', 'OPTIONS'],
  pubsub: ['POST'],
  oci: ['POST'],
  'azure-monitor': ['POST'],
  cloudevents: ['POST', 'OPTIONS'],
};

const PROTOCOLS: Readonly<Record<DeliveryProtocol, (request: ProtocolRequest, deps: ProtocolDeps) => ProtocolOutcome | Promise<ProtocolOutcome>>> = {
  sns: snsDelivery,
  eventgrid: eventGridDelivery,
  pubsub: pubsubDelivery,
  oci: ociDelivery,
  'azure-monitor': azureMonitorDelivery,
  cloudevents: cloudEventsDelivery,
};

/**
 * One delivery in a provider's own protocol: its handshake answered, or its authentication
 * verified (401, or 503 while a key server is away) and its envelope unwrapped, then the inner
 * events accepted as any other delivery (422, 200 duplicate, 202, 503).
 */
export async function handleProtocolDelivery(protocol: DeliveryProtocol, request: ProtocolRequest, deps: ProtocolDeps): Promise<IntakeResponse> {
  if (request.method === 'OPTIONS') {
    const handshake = cloudEventsHandshake(request);
    return 'answer' in handshake ? handshake.answer : answer(500, 'internal', { error: 'internal' });
  }
  if (jsonDepthExceeds(request.body, MAX_JSON_DEPTH)) {
    return answer(400, 'malformed', {
      error: 'too_deep',
      limit: MAX_JSON_DEPTH,
      message: `the body nests deeper than ${MAX_JSON_DEPTH} levels; no provider payload does`,
    });
  }
  const outcome = await PROTOCOLS[protocol](request, deps);
  if ('answer' in outcome) return outcome.answer;
  return acceptPayloads(outcome.verified, deps);
}
