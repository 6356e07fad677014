import { createHash } from 'node:crypto';
import { answer } from '../handle-delivery.ts';
import {
  checkToken,
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

/** OCI Notifications' own hosts, for the ConfirmationURL: `[cellN.]notification.<region>.oci.oraclecloud.com` and the government and sovereign realms' domains. */
export const OCI_NOTIFICATION_HOST =
  /^(?:cell-?\d+\.)?notification\.[a-z0-9-]+\.oci\.(?:oraclecloud\.com|oraclegovcloud\.com|oraclegovcloud\.uk|oraclecloud8\.com|oraclecloud9\.com|oraclecloud10\.com)$/;

/**
 * OCI Notifications, HTTPS (custom URL) subscription with our token as the basic-auth password
 * of the subscription URL (`https://gpualert:TOKEN@host/v1/deliveries/oci`): the confirmation
 * request is answered by fetching its ConfirmationURL (an OCI Notifications host); messages
 * are the Events service's events, identified by `X-OCI-NS-MessageId`.
 */
export async function ociDelivery(request: ProtocolRequest, deps: ProtocolDeps): Promise<ProtocolOutcome> {
  const denied = checkToken(request, deps);
  if (denied) return unauthorized(denied);
  const parsed = parseJson(request.body);
  if (!parsed.ok) return parsed.outcome;
  const type = header(request.headers, 'x-oci-ns-messagetype');
  const body = parsed.value;
  const confirmation = header(request.headers, 'x-oci-ns-confirmationurl') ?? (isRecord(body) ? body.ConfirmationURL : undefined);
  if (type === 'SubscriptionConfirmation' || (type === undefined && confirmation !== undefined && isRecord(body) && Object.keys(body).length <= 3)) {
    const url = allowedUrl(confirmation, OCI_NOTIFICATION_HOST, deps.deliveries.config.fetchAllowance);
    if (!url)
      return refuse(
        400,
        'malformed',
        'confirmation_url_not_allowed',
        'ConfirmationURL: expected an https URL on an OCI Notifications host (notification.<region>.oci.oraclecloud.com)',
      );
    try {
      const confirmed = await boundedGet(url);
      if (confirmed.status !== 200) throw new ProviderFetchError(`${url.host} answered ${confirmed.status} to the confirmation`);
    } catch (error) {
      if (error instanceof ProviderFetchError) return keyServerAway(error);
      throw error;
    }
    return { answer: answer(200, 'subscribed', { status: 'subscribed' }) };
  }
  if (type === 'UnsubscribeConfirmation') return { answer: answer(200, 'unsubscribed', { status: 'unsubscribed' }) };
  const messageId = header(request.headers, 'x-oci-ns-messageid') ?? createHash('sha256').update(request.body).digest('hex');
  return { verified: { provider: 'oci', payloads: [body], deliveryId: `oci:${messageId}` } };
}
