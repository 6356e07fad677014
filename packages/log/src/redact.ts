/**
 * One redaction for every text that can carry a URL or a config value on its way out of the
 * process: error messages, notification records, dead-letter reasons, config errors. What it
 * hides: URL userinfo and query values, the tokens vendors put in webhook paths (Slack, Feishu,
 * Lark, DingTalk, WeCom, Discord, Teams), `whsec_` secrets, `Bearer`/`Basic`/`GenieKey`
 * credentials, and `key=value` / `"key": "value"` pairs whose key names a secret.
 */
export const REDACTED = '[redacted]';

/** Path segments after these prefixes are the webhook's secret token. */
const TOKEN_PATHS: readonly RegExp[] = [
  /(hooks\.slack\.com\/(?:services|workflows|triggers)\/)[^\s"'<>?#]+/gi,
  /((?:open\.feishu\.cn|open\.larksuite\.com)\/open-apis\/bot\/v2\/hook\/)[^\s"'<>?#]+/gi,
  /(discord(?:app)?\.com\/api\/webhooks\/)[^\s"'<>?#]+/gi,
  /(\.webhook\.office\.com\/webhookb2\/)[^\s"'<>?#]+/gi,
  /(events\.pagerduty\.com\/integration\/)[^\s"'<>?#]+/gi,
  // Splunk On-Call's REST endpoint carries its api key as a path segment: …/alert/{api_key}/{routing_key}.
  /(\/integrations\/generic\/\d+\/alert\/)[^\s"'<>?#]+/gi,
];

/** Names whose values are secrets wherever they appear as `name=value` or `"name": "value"`. */
const SECRET_NAMES =
  'access_token|token|key|api_key|apikey|routing_key|routingKey|integration_key|secret|password|passwd|sign|signature|sig|auth|authorization|client_secret';

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;
/** `user:password@` with or without a scheme (a broker list, a URL someone forgot the scheme of). */
const USERINFO = /(^|[\s"'(,=/])[^\s"'(,=/:@]+:[^\s"'@/]*@(?=[^\s"'@]*[A-Za-z0-9])/g;
const QUERY_VALUE = /([?&][^=&\s"'#]+=)[^&\s"'#]+/g;
const NAMED_PAIR = new RegExp(`((?:^|[^A-Za-z0-9_])(?:${SECRET_NAMES})"?\\s*[=:]\\s*"?)[^\\s"'&,;}]+`, 'gi');
const CREDENTIAL_SCHEMES = /\b(Bearer|Basic|GenieKey|Token)\s+[A-Za-z0-9._~+/=-]+/g;
const WHSEC = /whsec_[A-Za-z0-9+/=_-]+/g;

/** A URL fit to show: no userinfo, no query values, no webhook path tokens; scheme, host and path stay. */
export function redactUrl(url: string): string {
  return redactSecrets(url);
}

/** The text with every secret it may carry replaced by `[redacted]`; idempotent. */
export function redactSecrets(text: string): string {
  let out = String(text);
  out = out.replace(URL_IN_TEXT, (url) => url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/i, `$1${REDACTED}@`));
  out = out.replace(USERINFO, `$1${REDACTED}@`);
  for (const pattern of TOKEN_PATHS) out = out.replace(pattern, `$1${REDACTED}`);
  out = out.replace(QUERY_VALUE, `$1${REDACTED}`);
  out = out.replace(CREDENTIAL_SCHEMES, `$1 ${REDACTED}`);
  out = out.replace(NAMED_PAIR, `$1${REDACTED}`);
  out = out.replace(WHSEC, `whsec_${REDACTED}`);
  return out;
}
