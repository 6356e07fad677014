import { newEnvelope, Pager, parseEnvelope, stableId, TOPICS, type Envelope } from '@gpualert/schema';
import { envelopeMessage } from '@gpualert/bus';
import { redactSecrets } from '@gpualert/log';
import { answer, authenticate, type IntakeDeps, type IntakeResponse } from '../handle-delivery.ts';
import { errorMessage } from '../error-message.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../json-depth.ts';
import { tokenMatches } from '../standard-webhooks.ts';
import { verifyPagerDutySignature } from './pagerduty-signature.ts';
import { PAGER_READERS } from './pager-acknowledgement.ts';

const SOURCE = 'intake-pager/0.1.0';
/** A pager's own time is believed within the event-time window at the door; outside it, the receipt dates the event. */
const MAX_LEAD_MS = 5 * 60_000;
const MAX_AGE_MS = 7 * 86_400_000;

export interface PagerDeps extends IntakeDeps {
  /** PagerDuty v3 webhook subscriptions' signing secrets (several during a rotation). */
  readonly pagerdutySecrets: readonly string[];
  /** Opsgenie's own tokens (several during a rotation); none: the intake's token, as every route. */
  readonly opsgenieTokens: readonly string[];
}

export interface PagerRequest {
  readonly pager: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/**
 * `POST /v1/pager/{pagerduty|opsgenie}`: a pager says someone acknowledged, resolved or reassigned
 * a page gpualert sent. PagerDuty signs each webhook (`X-PagerDuty-Signature`); Opsgenie does not
 * sign: a token set as a custom header of the Opsgenie webhook integration, one of
 * `opsgenieTokens` where they are set (the intake's own token is then refused here), else the
 * intake's token like every route. The acknowledgement goes to gpualert.notifications, keyed
 * by the pager (the webhook does not name the host), with an id derived from the pager's event,
 * so a redelivery is told once.
 */
export async function handlePagerWebhook(request: PagerRequest, deps: PagerDeps): Promise<IntakeResponse> {
  const pager = Pager.safeParse(request.pager);
  if (!pager.success) {
    return answer(404, 'unknown_pager', {
      error: 'unknown_pager',
      message: `no pager "${request.pager.slice(0, 40)}"; expected one of ${Pager.options.join(', ')}`,
    });
  }
  const refused =
    pager.data === 'pagerduty'
      ? (() => {
          const verified = verifyPagerDutySignature(header(request.headers, 'x-pagerduty-signature'), request.body, deps.pagerdutySecrets);
          return verified.ok ? undefined : verified.reason;
        })()
      : deps.opsgenieTokens.length > 0
        ? opsgenieTokenRefused(header(request.headers, deps.auth.tokenHeader.toLowerCase()), deps.opsgenieTokens, deps.auth.tokenHeader)
        : authenticate({ provider: pager.data, headers: request.headers, body: request.body }, deps);
  if (refused) return answer(401, 'unauthorized', { error: 'unauthorized', message: refused });
  if (jsonDepthExceeds(request.body, MAX_JSON_DEPTH)) {
    return answer(400, 'malformed', {
      error: 'too_deep',
      limit: MAX_JSON_DEPTH,
      message: `the body nests deeper than ${MAX_JSON_DEPTH} levels; no pager webhook does`,
    });
  }
  let payload: unknown;
  try {
    payload = JSON.parse(request.body.toString('utf8'));
  } catch (error) {
    return answer(400, 'malformed', { error: 'malformed_json', message: `the body is not JSON: ${errorMessage(error)}` });
  }
  const reading = PAGER_READERS[pager.data](payload);
  if (reading.kind === 'invalid') return answer(422, 'unrecognised', { error: 'unrecognised_payload', field: reading.field, message: reading.message });
  // A 2xx, so the pager does not retry what gpualert will never record.
  if (reading.kind === 'ignored') return answer(200, 'ignored', { status: 'ignored', message: reading.reason });
  const now = deps.now();
  const when = reading.at !== undefined && reading.at <= now + MAX_LEAD_MS && reading.at >= now - MAX_AGE_MS ? reading.at : now;
  const envelope = newEnvelope({
    type: 'acknowledgement',
    id: stableId('acknowledgement', pager.data, reading.data.pager_event),
    host: pager.data,
    source: SOURCE,
    ts: new Date(when).toISOString(),
    data: reading.data,
  });
  const message = envelopeMessage(envelope);
  // Checked as every reader will check it, on the very bytes published.
  const checked = parseEnvelope(message.value);
  if (!checked.ok) return answer(422, 'invalid_event', { error: 'invalid_event', message: checked.error.message });
  try {
    await publishWithin(deps, envelope, message);
  } catch (error) {
    const detail = redactSecrets(error instanceof Error ? error.message : String(error));
    return answer(503, 'unavailable', { error: 'unavailable', message: `the acknowledgement could not be made durable: ${detail}` }, { 'retry-after': '5' });
  }
  return { ...answer(202, 'accepted', { status: 'accepted', id: envelope.id, action: reading.data.action, fingerprint: reading.data.fingerprint }), events: 1 };
}

async function publishWithin(deps: IntakeDeps, envelope: Envelope, message: ReturnType<typeof envelopeMessage>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Kafka did not acknowledge ${envelope.id} within ${deps.publishTimeoutMs} ms`)), deps.publishTimeoutMs);
  });
  try {
    const published = deps.bus.publish(TOPICS.notifications, [message]);
    published.catch(() => {}); // a late failure after the deadline was already answered with 503
    await Promise.race([published, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function header(headers: PagerRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** Why an Opsgenie delivery's token is refused (undefined: it is one of Opsgenie's own), every token compared in constant time. */
function opsgenieTokenRefused(offered: string | undefined, tokens: readonly string[], tokenHeader: string): string | undefined {
  if (offered === undefined) return `missing the ${tokenHeader} token of the Opsgenie integration`;
  let matched = false;
  for (const token of tokens) if (tokenMatches(offered, token)) matched = true;
  return matched ? undefined : `the ${tokenHeader} token is not the Opsgenie integration's`;
}
