import { verify } from 'node:crypto';
import { answer } from '../handle-delivery.ts';
import {
  header,
  isRecord,
  keyServerAway,
  parseJson,
  refuse,
  unauthorized,
  type ProtocolDeps,
  type ProtocolOutcome,
  type ProtocolRequest,
} from './delivery-protocol.ts';
import { allowedUrl, boundedGet, ProviderFetchError } from './provider-fetch.ts';

/** SNS's own hosts, for the signing certificate and the SubscribeURL: `sns.<region>.amazonaws.com`, `.com.cn` in China. */
export const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;
/** The subject of SNS's signing certificates. */
const SNS_CERT_SUBJECT = /(?:^|\n)CN=sns\.amazonaws\.com(?:\.cn)?(?:\n|$)/;

/** The fields signed, in order, per message type (AWS: "Verifying the signatures of Amazon SNS messages"). */
const SIGNED_FIELDS: ReadonlyMap<string, readonly string[]> = new Map([
  ['Notification', ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']],
  ['SubscriptionConfirmation', ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type']],
  ['UnsubscribeConfirmation', ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type']],
]);

/** The text SNS signs: each present field's name and value, one per line. */
export function snsStringToSign(message: Readonly<Record<string, unknown>>): string | undefined {
  const fields = SIGNED_FIELDS.get(String(message.Type));
  if (!fields) return undefined;
  let text = '';
  for (const field of fields) {
    const value = message[field];
    if (value === undefined && field === 'Subject') continue;
    if (typeof value !== 'string') return undefined;
    text += `${field}\n${value}\n`;
  }
  return text;
}

/**
 * Amazon SNS over HTTPS: the signature is checked against SNS's certificate (fetched from an SNS
 * host, cached) before anything else is believed; a SubscriptionConfirmation from an allowed
 * topic is confirmed by fetching its SubscribeURL (an SNS host); a Notification's Message is the
 * EventBridge event, handed to the AWS adapter under the SNS MessageId.
 */
export async function snsDelivery(request: ProtocolRequest, deps: ProtocolDeps): Promise<ProtocolOutcome> {
  const parsed = parseJson(request.body);
  if (!parsed.ok) return parsed.outcome;
  const message = parsed.value;
  if (!isRecord(message)) return refuse(400, 'malformed', 'not_sns', 'expected an SNS message (a JSON object with Type)');
  const type = String(message.Type);
  const headerType = header(request.headers, 'x-amz-sns-message-type');
  if (headerType !== undefined && headerType !== type)
    return refuse(400, 'malformed', 'not_sns', `x-amz-sns-message-type says ${headerType.slice(0, 40)}, the body ${type.slice(0, 40)}`);
  const text = snsStringToSign(message);
  if (text === undefined)
    return refuse(
      400,
      'malformed',
      'not_sns',
      `Type: expected Notification, SubscriptionConfirmation or UnsubscribeConfirmation with its string fields (got "${type.slice(0, 40)}")`,
    );

  const { config } = deps.deliveries;
  const certUrl = allowedUrl(message.SigningCertURL, SNS_HOST, config.fetchAllowance);
  if (!certUrl || !certUrl.pathname.endsWith('.pem'))
    return unauthorized('SigningCertURL: expected an https URL of a .pem on an SNS host (sns.<region>.amazonaws.com)');
  const algorithm = message.SignatureVersion === '1' ? 'sha1' : message.SignatureVersion === '2' ? 'sha256' : undefined;
  if (!algorithm) return unauthorized('SignatureVersion: expected "1" (SHA1withRSA) or "2" (SHA256withRSA)');
  if (typeof message.Signature !== 'string') return unauthorized('Signature: missing');
  let certificate;
  try {
    certificate = await deps.deliveries.snsCertificates.key(certUrl);
  } catch (error) {
    if (error instanceof ProviderFetchError) return keyServerAway(error);
    throw error;
  }
  const now = deps.now();
  if (!SNS_CERT_SUBJECT.test(certificate.subject)) return unauthorized('the signing certificate is not issued to sns.amazonaws.com');
  if (Date.parse(certificate.validFrom) > now || Date.parse(certificate.validTo) < now) return unauthorized('the signing certificate is not valid now');
  const signed = verify(algorithm, Buffer.from(text, 'utf8'), certificate.publicKey, Buffer.from(message.Signature, 'base64'));
  if (!signed) return unauthorized('Signature: does not verify with the SNS signing certificate');

  // Signed by AWS, but anyone can subscribe our URL to a topic of their own: only the configured topics count.
  const topic = String(message.TopicArn);
  if (!config.snsTopicArns.includes(topic)) {
    return refuse(403, 'forbidden', 'topic_not_allowed', `TopicArn ${topic.slice(0, 256)} is not one of the intake's SNS topics (GPUALERT_INTAKE_SNS_TOPICS)`);
  }
  // A signed message replayed after we forgot it would be new again: older than our memory is refused.
  const sent = Date.parse(String(message.Timestamp));
  if (!Number.isFinite(sent) || now - sent > deps.seenTtlMs)
    return unauthorized(`Timestamp: older than the ${Math.round(deps.seenTtlMs / 3_600_000)} h the intake remembers deliveries`);

  if (type === 'UnsubscribeConfirmation') return { answer: answer(200, 'unsubscribed', { status: 'unsubscribed', topic }) };
  if (type === 'SubscriptionConfirmation') {
    const subscribe = allowedUrl(message.SubscribeURL, SNS_HOST, config.fetchAllowance);
    if (!subscribe) return unauthorized('SubscribeURL: expected an https URL on an SNS host');
    try {
      const confirmed = await boundedGet(subscribe);
      if (confirmed.status !== 200) throw new ProviderFetchError(`${subscribe.host} answered ${confirmed.status} to the confirmation`);
    } catch (error) {
      if (error instanceof ProviderFetchError) return keyServerAway(error);
      throw error;
    }
    return { answer: answer(200, 'subscribed', { status: 'subscribed', topic }) };
  }
  let event: unknown;
  try {
    event = JSON.parse(String(message.Message));
  } catch {
    return refuse(
      422,
      'unrecognised',
      'unrecognised_payload',
      'Message: expected the EventBridge event as JSON text (subscribe the topic with raw message delivery off)',
    );
  }
  return { verified: { provider: 'aws', payloads: [event], deliveryId: `sns:${String(message.MessageId)}` } };
}
