import { listenSetting, listSetting, loadConfig, MIN_TOKEN_CHARS, portSetting, type SettingSources } from '@gpualert/config';
import { z } from 'zod';

/**
 * The intake's default port: clear of what GPU hosts and their monitoring usually hold already
 * (8080 for everything, 9090 Prometheus, 9093/9094 Alertmanager, 9100 node exporter, 9400 DCGM
 * exporter).
 */
export const DEFAULT_INTAKE_PORT = 9468;

/** A Standard Webhooks secret is 24 to 64 random bytes; under 16 (128 bits) a signature can be forged by brute force. */
export const MIN_SECRET_BYTES = 16;
/** The most an operator may raise the body limit to: far above any provider notice, and bounded memory per request. */
export const MAX_BODY_BYTES_LIMIT = 16 * 1024 * 1024;

const WebhookSecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/=]+$/, 'expected whsec_<base64>')
  .refine(
    (secret) => Buffer.from(secret.slice('whsec_'.length), 'base64').length >= MIN_SECRET_BYTES,
    `expected a secret of at least ${MIN_SECRET_BYTES} bytes after whsec_`,
  );

/**
 * The intake's settings. Secrets come from the environment or a file, never from flags or the
 * URL (a command line is visible to every user of the machine).
 */
export const IntakeConfig = z.object({
  port: portSetting.default(DEFAULT_INTAKE_PORT),
  listen: listenSetting.default('0.0.0.0'),
  maxBodyBytes: z.coerce
    .number()
    .int()
    .positive()
    .max(MAX_BODY_BYTES_LIMIT)
    .default(256 * 1024),
  secrets: listSetting(WebhookSecret).default([]),
  token: z.string().min(MIN_TOKEN_CHARS, `expected a token of at least ${MIN_TOKEN_CHARS} characters`).optional(),
  tokenHeader: z.string().default('authorization'),
  seenTtlHours: z.coerce.number().positive().default(48),
  publishTimeoutMs: z.coerce.number().int().positive().default(3_000),
  /** PagerDuty v3 webhook subscriptions' signing secrets (`/v1/pager/pagerduty`), several during a rotation. */
  pagerdutySecrets: listSetting(z.string().min(MIN_SECRET_BYTES, `expected a PagerDuty signing secret of at least ${MIN_SECRET_BYTES} characters`)).default([]),
  /**
   * Tokens of `/v1/pager/opsgenie` alone (Opsgenie does not sign; its webhook integration sends one
   * as a custom header), several during a rotation: set, the intake's own token is not taken there,
   * so the Opsgenie integration holds a token that can only acknowledge, not announce maintenance.
   */
  opsgenieTokens: listSetting(z.string().min(MIN_TOKEN_CHARS, `expected a token of at least ${MIN_TOKEN_CHARS} characters`)).default([]),
  /** SNS topics (ARNs) whose deliveries `/v1/deliveries/sns` takes. */
  snsTopicArns: listSetting(z.string().regex(/^arn:aws(?:-cn|-us-gov)?:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/, 'expected an SNS topic ARN')).default([]),
  /** Pub/Sub push: the audience set on the subscription (usually the endpoint URL). */
  pubsubAudience: z.string().min(1).optional(),
  /** Pub/Sub push: the service accounts the subscriptions push as. */
  pubsubServiceAccounts: listSetting(z.string().regex(/^[^@\s]+@[^@\s]+$/, 'expected a service account email')).default([]),
});
export type IntakeConfig = z.infer<typeof IntakeConfig>;

/** Where each intake setting comes from besides the files: only the port and the address have flags. */
export const INTAKE_SOURCES: SettingSources<IntakeConfig> = {
  port: { env: 'GPUALERT_INTAKE_PORT' },
  listen: { env: 'GPUALERT_INTAKE_LISTEN' },
  maxBodyBytes: { env: 'GPUALERT_INTAKE_MAX_BODY_BYTES', flag: false },
  secrets: { env: 'GPUALERT_INTAKE_SECRETS', flag: false, secret: true },
  token: { env: 'GPUALERT_INTAKE_TOKEN', flag: false, secret: true },
  tokenHeader: { env: 'GPUALERT_INTAKE_TOKEN_HEADER', flag: false },
  seenTtlHours: { flag: false },
  publishTimeoutMs: { flag: false },
  pagerdutySecrets: { env: 'GPUALERT_INTAKE_PAGERDUTY_SECRETS', flag: false, secret: true },
  opsgenieTokens: { env: 'GPUALERT_INTAKE_OPSGENIE_TOKENS', flag: false, secret: true },
  snsTopicArns: { env: 'GPUALERT_INTAKE_SNS_TOPICS', flag: false },
  pubsubAudience: { env: 'GPUALERT_INTAKE_PUBSUB_AUDIENCE', flag: false },
  pubsubServiceAccounts: { env: 'GPUALERT_INTAKE_PUBSUB_SERVICE_ACCOUNTS', flag: false },
};

/** The intake's own secrets file (YAML keyed like IntakeConfig): `--secrets-file`, else GPUALERT_INTAKE_SECRETS_FILE. */
export function intakeSecretsFile(flag: unknown, env: Readonly<Record<string, string | undefined>>): string[] {
  const file = typeof flag === 'string' && flag !== '' ? flag : env.GPUALERT_INTAKE_SECRETS_FILE;
  return file ? [file] : [];
}

/** The intake's settings alone (tests, embedding): flags over the environment over the secrets file. */
export function intakeConfigFrom(
  env: Readonly<Record<string, string | undefined>>,
  flags: { port?: string; listen?: string; secretsFile?: string },
): IntakeConfig {
  return loadConfig(IntakeConfig, INTAKE_SOURCES, { env, flags, files: intakeSecretsFile(flags.secretsFile, env) });
}
