import { createHash } from 'node:crypto';
import { answer } from '../handle-delivery.ts';
import { checkToken, isRecord, parseJson, refuse, unauthorized, type ProtocolDeps, type ProtocolOutcome, type ProtocolRequest } from './delivery-protocol.ts';
import { innerDelivery } from './inner-delivery.ts';

/** Event Grid sends at most 5,000 events per batch by default; a batch past that is not Event Grid's. */
export const MAX_EVENTGRID_BATCH = 5_000;

const VALIDATION = 'Microsoft.EventGrid.SubscriptionValidationEvent';

/**
 * Azure Event Grid, Event Grid schema: the subscription validation is answered with
 * `{ validationResponse }` (200, synchronously); events follow as an array whose `data` is the
 * provider's event (Azure Monitor's common alert schema, or any event the adapters read). Both
 * carry our token: in a delivery property header or the endpoint URL's `token` parameter.
 */
export function eventGridDelivery(request: ProtocolRequest, deps: ProtocolDeps): ProtocolOutcome {
  const denied = checkToken(request, deps);
  if (denied) return unauthorized(denied);
  const parsed = parseJson(request.body);
  if (!parsed.ok) return parsed.outcome;
  const events = parsed.value;
  if (!Array.isArray(events) || events.length === 0) return refuse(400, 'malformed', 'not_eventgrid', 'expected an array of Event Grid events');
  if (events.length > MAX_EVENTGRID_BATCH)
    return refuse(413, 'too_large', 'batch_too_large', `at most ${MAX_EVENTGRID_BATCH} events per delivery (got ${events.length})`);
  const first = events[0];
  if (isRecord(first) && first.eventType === VALIDATION) {
    const code = isRecord(first.data) ? first.data.validationCode : undefined;
    if (typeof code !== 'string' || code.length > 512) return refuse(400, 'malformed', 'not_eventgrid', 'data.validationCode: expected the validation code');
    return { answer: answer(200, 'validated', { validationResponse: code }) };
  }
  const ids: string[] = [];
  const payloads: unknown[] = [];
  for (let i = 0; i < events.length; i += 1) {
    const item = events[i];
    if (!isRecord(item) || typeof item.id !== 'string' || typeof item.eventType !== 'string')
      return refuse(400, 'malformed', 'not_eventgrid', `${i}: expected an Event Grid event with id and eventType`);
    ids.push(item.id);
    payloads.push(item.data);
  }
  // One delivery is one batch: its ids together are its identity (Event Grid redelivers the same batch).
  const [only] = ids;
  const deliveryId = ids.length === 1 && only !== undefined ? only : createHash('sha256').update(ids.join('\n')).digest('hex');
  return innerDelivery('eventgrid', payloads, deliveryId);
}
