import { z } from 'zod';

/**
 * The keys of Alertmanager 0.25's HTTP client config (prometheus/common's HTTPClientConfig): an
 * unknown one is refused as Alertmanager refuses it ("field … not found").
 */
const HTTP_CONFIG_KEYS = [
  'authorization',
  'basic_auth',
  'bearer_token',
  'bearer_token_file',
  'oauth2',
  'tls_config',
  'proxy_url',
  'follow_redirects',
  'enable_http2',
];

/**
 * Alertmanager's `global:` keys. The ones a mapped integration reads are used (smtp_*, *_api_url,
 * api keys), `resolve_timeout` is accepted and not needed (gpualert waits for the source to
 * resolve: see the README), and the wechat, telegram and webex defaults only serve integrations
 * gpualert refuses. What would be ignored is refused: a `*_file` secret (gpualert reads secrets
 * from the file or `env:`), CRAM-MD5 (`smtp_auth_secret`) and a PLAIN identity, and the HTTP
 * client's settings (proxy, TLS, auth), which gpualert's senders do not take; `follow_redirects`
 * and `enable_http2` are accepted at Alertmanager's defaults (true), which is what they do here.
 */
export const GlobalConfig = z
  .strictObject({
    resolve_timeout: z.string().optional(),
    http_config: z.record(z.string(), z.unknown()).optional(),
    smtp_from: z.string().optional(),
    smtp_hello: z.string().optional(),
    smtp_smarthost: z.string().optional(),
    smtp_auth_username: z.string().optional(),
    smtp_auth_password: z.string().optional(),
    smtp_auth_password_file: z.string().optional(),
    smtp_auth_secret: z.string().optional(),
    smtp_auth_identity: z.string().optional(),
    smtp_require_tls: z.boolean().optional(),
    slack_api_url: z.string().optional(),
    slack_api_url_file: z.string().optional(),
    pagerduty_url: z.string().optional(),
    opsgenie_api_url: z.string().optional(),
    opsgenie_api_key: z.string().optional(),
    opsgenie_api_key_file: z.string().optional(),
    wechat_api_url: z.string().optional(),
    wechat_api_secret: z.string().optional(),
    wechat_api_corp_id: z.string().optional(),
    victorops_api_url: z.string().optional(),
    victorops_api_key: z.string().optional(),
    telegram_api_url: z.string().optional(),
    webex_api_url: z.string().optional(),
  })
  .superRefine((global, ctx) => {
    const refuse = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    for (const key of ['smtp_auth_password_file', 'slack_api_url_file', 'opsgenie_api_key_file'] as const) {
      if (global[key] !== undefined)
        refuse(
          [key],
          `${key}: a secret in a file is not read by gpualert (it would be ignored, so it is refused); write it here as env:NAME, or in the file itself`,
        );
    }
    if (global.smtp_auth_secret !== undefined)
      refuse(
        ['smtp_auth_secret'],
        'smtp_auth_secret: CRAM-MD5 is not supported by gpualert (it would be ignored, so it is refused); use smtp_auth_username and smtp_auth_password',
      );
    if (global.smtp_auth_identity !== undefined)
      refuse(['smtp_auth_identity'], 'smtp_auth_identity: a PLAIN identity is not supported by gpualert (it would be ignored, so it is refused)');
    for (const [key, value] of Object.entries(global.http_config ?? {})) {
      if (!HTTP_CONFIG_KEYS.includes(key)) refuse(['http_config', key], `field ${key} not found in http_config (Alertmanager 0.25 refuses it too)`);
      else if ((key === 'follow_redirects' || key === 'enable_http2') && value !== true)
        refuse(
          ['http_config', key],
          `${key}: gpualert's senders always ${key === 'follow_redirects' ? 'follow redirects' : 'may use HTTP/2 where offered'}; only true is accepted`,
        );
      else if (key !== 'follow_redirects' && key !== 'enable_http2')
        refuse(
          ['http_config', key],
          `http_config.${key}: gpualert's senders do not take Alertmanager's HTTP client settings (proxy, TLS, auth); it would be ignored, so it is refused`,
        );
    }
  })
  .default({});
export type GlobalConfig = z.infer<typeof GlobalConfig>;
