import { createHash } from 'node:crypto';
import type { OutgoingMessage } from '@gpualert/bus';
import { redactSecrets } from '@gpualert/log';
import { eventTimeProblem, inertRecord, parseEnvelope, stableId, TOPICS } from '@gpualert/schema';
import { answer, authenticate, type IntakeDeps, type IntakeResponse } from './handle-delivery.ts';
import { isRecord } from './deliveries/delivery-protocol.ts';
import { errorMessage } from './error-message.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.ts';

/** Events one request may carry: a framework reporting each rank's step batches a node's 8–16 ranks; 100 leaves room. */
export const MAX_JOB_EVENTS_PER_REQUEST = 100;

const SOURCE = 'intake-job/0.1.0';
const ENVELOPE_FIELDS = new Set(['host', 'ts', 'labels', 'id']);

export interface JobEventsRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/**
 * `POST /v1/job-events`: one job event (`{ host, ts?, labels?, id?, job, kind, rank?, gpu?, step?, … }`)
 * or `{ "events": [ … ] }`, from a framework or a script that reports directly. Checked in the
 * order a sender can act on: who (401), what (400, 422), and only then published (202, or 503
 * to retry). Every event is checked as the engine will check it before any is published.
 */
export async function handleJobEvents(request: JobEventsRequest, deps: IntakeDeps): Promise<IntakeResponse> {
  const auth = authenticate({ provider: 'job-events', headers: request.headers, body: request.body }, deps);
  if (auth) return answer(401, 'unauthorized', { error: 'unauthorized', message: auth });
  if (jsonDepthExceeds(request.body, MAX_JSON_DEPTH)) {
    return answer(400, 'malformed', {
      error: 'too_deep',
      limit: MAX_JSON_DEPTH,
      message: `the body nests deeper than ${MAX_JSON_DEPTH} levels; no job event does`,
    });
  }
  let payload: unknown;
  try {
    payload = JSON.parse(request.body.toString('utf8'));
  } catch (error) {
    return answer(400, 'malformed', { error: 'malformed_json', message: `the body is not JSON: ${errorMessage(error)}` });
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return answer(422, 'unrecognised', { error: 'unrecognised_payload', field: '', message: 'expected one job event or { "events": [ … ] }' });
  }
  const batch = Object.hasOwn(payload, 'events');
  const events: unknown = batch && 'events' in payload ? payload.events : [payload];
  if (!Array.isArray(events) || events.length === 0) {
    return answer(422, 'unrecognised', { error: 'unrecognised_payload', field: 'events', message: 'events: expected a non-empty list of job events' });
  }
  if (events.length > MAX_JOB_EVENTS_PER_REQUEST) {
    return answer(422, 'too_many_events', {
      error: 'too_many_events',
      field: 'events',
      limit: MAX_JOB_EVENTS_PER_REQUEST,
      message: `events: at most ${MAX_JOB_EVENTS_PER_REQUEST} per request, this one holds ${events.length}; send them in several`,
    });
  }
  const receivedAt = deps.now();
  const deliveryId = header(request.headers, 'webhook-id') ?? createHash('sha256').update(request.body).digest('hex');
  const messages: OutgoingMessage[] = [];
  for (let i = 0; i < events.length; i += 1) {
    const where = batch ? `events.${i}.` : '';
    const built = envelopeOf(events[i], i, deliveryId, receivedAt);
    if ('invalid' in built) {
      const field = `${where}${built.invalid.path}`.replace(/\.$/, '');
      return answer(422, 'invalid_event', { error: 'invalid_event', field, message: `${field === '' ? 'event' : field}: ${built.invalid.message}` });
    }
    messages.push(built.message);
  }
  try {
    await publishWithin(deps, messages);
  } catch (error) {
    const detail = redactSecrets(error instanceof Error ? error.message : String(error));
    return answer(503, 'unavailable', { error: 'unavailable', message: `events could not be made durable: ${detail}` }, { 'retry-after': '5' });
  }
  return { ...answer(202, 'accepted', { status: 'accepted', delivery: deliveryId, events: messages.length }), events: messages.length };
}

/** One reported event as the `job.event` envelope it publishes, checked by `parseEnvelope` on the very bytes the engine reads. */
function envelopeOf(
  event: unknown,
  index: number,
  deliveryId: string,
  receivedAt: number,
): { message: OutgoingMessage } | { invalid: { path: string; message: string } } {
  if (!isRecord(event)) return { invalid: { path: '', message: 'expected an object' } };
  const e = event;
  if (typeof e.host !== 'string') return { invalid: { path: 'host', message: "expected the reporting machine's host name" } };
  const ts = e.ts === undefined ? new Date(receivedAt).toISOString() : e.ts;
  if (typeof ts !== 'string') return { invalid: { path: 'ts', message: 'expected an ISO-8601 time' } };
  const late = eventTimeProblem(ts, receivedAt);
  if (late) return { invalid: { path: 'ts', message: late.replace(/^ts: /, '') } };
  const data = inertRecord<unknown>(); // the sender's keys are data: `__proto__` stays a key, and the schema refuses it
  for (const key of Object.keys(e)) if (!ENVELOPE_FIELDS.has(key)) data[key] = e[key];
  if (data.message === undefined) data.message = '';
  const envelope = {
    id: typeof e.id === 'string' ? e.id : stableId('job.event', deliveryId, index),
    type: 'job.event',
    ts,
    host: e.host,
    labels: e.labels ?? {},
    source: SOURCE,
    data,
  };
  const value = JSON.stringify(envelope);
  const parsed = parseEnvelope(value);
  if (!parsed.ok)
    return { invalid: { path: parsed.error.path.replace(/^data\./, '').replace(/^data$/, ''), message: parsed.error.message.replace(/^[^:]*: /, '') } };
  return { message: { key: parsed.value.host, value, timestamp: Date.parse(parsed.value.ts) } };
}

async function publishWithin(deps: IntakeDeps, messages: readonly OutgoingMessage[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Kafka did not acknowledge within ${deps.publishTimeoutMs} ms`)), deps.publishTimeoutMs);
  });
  try {
    const published = deps.bus.publish(TOPICS.jobEvents, messages);
    published.catch(() => {}); // a late failure after the deadline was already answered with 503
    await Promise.race([published, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function header(headers: JobEventsRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The `source` of every envelope a direct report becomes. */
export const JOB_EVENTS_SOURCE = SOURCE;
