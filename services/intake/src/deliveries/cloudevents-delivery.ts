import { createHash } from 'node:crypto';
import { answer } from '../handle-delivery.ts';
import {
  checkToken,
  header,
  isRecord,
  parseJson,
  refuse,
  unauthorized,
  type ProtocolDeps,
  type ProtocolOutcome,
  type ProtocolRequest,
} from './delivery-protocol.ts';
import { MAX_EVENTGRID_BATCH } from './eventgrid-delivery.ts';
import { innerDelivery } from './inner-delivery.ts';

/** An origin is a host name: 253 characters at most. */
const MAX_ORIGIN_LENGTH = 253;

/**
 * CloudEvents' abuse protection (HTTP webhook spec, section 4): a sender asks with OPTIONS and
 * `WebHook-Request-Origin` whether it may deliver here; we allow it and any rate. No token is
 * asked: the answer grants nothing, as every delivery still carries the token.
 */
export function cloudEventsHandshake(request: ProtocolRequest): ProtocolOutcome {
  const origin = header(request.headers, 'webhook-request-origin');
  if (!origin || origin.length > MAX_ORIGIN_LENGTH || !/^[A-Za-z0-9.*-]+(?::\d+)?$/.test(origin)) {
    return refuse(400, 'malformed', 'not_a_handshake', 'OPTIONS: expected a WebHook-Request-Origin header naming the sender');
  }
  return {
    answer: answer(200, 'handshake', { status: 'allowed', origin }, { 'webhook-allowed-origin': origin, 'webhook-allowed-rate': '*', allow: 'POST, OPTIONS' }),
  };
}

/**
 * CloudEvents 1.0 over HTTP, with our token: structured mode (`application/cloudevents+json`,
 * or a `-batch+json` array) and binary mode (`ce-*` headers, the body is the data). The data is
 * the provider's event; `source` and `id` together identify the delivery, as the spec says.
 */
export function cloudEventsDelivery(request: ProtocolRequest, deps: ProtocolDeps): ProtocolOutcome {
  const denied = checkToken(request, deps);
  if (denied) return unauthorized(denied);
  const [mediaType = ''] = String(header(request.headers, 'content-type') ?? '').split(';');
  const type = mediaType.trim().toLowerCase();
  const parsed = parseJson(request.body);
  if (!parsed.ok) return parsed.outcome;
  const events: { id: unknown; source: unknown; specversion: unknown; data: unknown }[] = [];
  if (type === 'application/cloudevents+json') {
    if (!isRecord(parsed.value)) return refuse(400, 'malformed', 'not_cloudevents', 'expected one CloudEvent (a JSON object)');
    events.push({ id: parsed.value.id, source: parsed.value.source, specversion: parsed.value.specversion, data: parsed.value.data });
  } else if (type === 'application/cloudevents-batch+json') {
    if (!Array.isArray(parsed.value) || parsed.value.length === 0) return refuse(400, 'malformed', 'not_cloudevents', 'expected an array of CloudEvents');
    if (parsed.value.length > MAX_EVENTGRID_BATCH) return refuse(413, 'too_large', 'batch_too_large', `at most ${MAX_EVENTGRID_BATCH} events per delivery`);
    for (const item of parsed.value)
      events.push(
        isRecord(item)
          ? { id: item.id, source: item.source, specversion: item.specversion, data: item.data }
          : { id: undefined, source: undefined, specversion: undefined, data: undefined },
      );
  } else {
    events.push({
      id: header(request.headers, 'ce-id'),
      source: header(request.headers, 'ce-source'),
      specversion: header(request.headers, 'ce-specversion'),
      data: parsed.value,
    });
  }
  const keys: string[] = [];
  for (const [i, e] of events.entries()) {
    if (e.specversion !== '1.0' || typeof e.id !== 'string' || typeof e.source !== 'string') {
      return refuse(
        400,
        'malformed',
        'not_cloudevents',
        `${events.length > 1 ? `${i}: ` : ''}expected specversion 1.0 with id and source (structured mode, or ce-specversion, ce-id, ce-source headers)`,
      );
    }
    keys.push(`${e.source}\n${e.id}`);
  }
  const deliveryId = createHash('sha256').update(keys.join('\n')).digest('hex');
  return innerDelivery(
    'cloudevents',
    events.map((e) => e.data),
    deliveryId,
  );
}
