import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/**
 * The intake's default port: clear of what GPU hosts and their monitoring usually hold already
 * (8080 for everything, 9090 Prometheus, 9093/9094 Alertmanager, 9100 node exporter, 9400 DCGM
 * exporter).
 */
export const DEFAULT_INTAKE_PORT = 9468;

/** A shared token is guessed byte by byte no faster than 2^128 tries at 16 characters: the same floor everywhere in gpualert. */
export const MIN_TOKEN_CHARS = 16;
/** A Standard Webhooks secret is 24 to 64 random bytes; under 16 (128 bits) a signature can be forged by brute force. */
export const MIN_SECRET_BYTES = 16;
/** The most an operator may raise the body limit to: far above any provider notice, and bounded memory per request. */
export const MAX_BODY_BYTES_LIMIT = 16 * 1024 * 1024;

const WebhookSecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/=]+$/, 'expected whsec_<base64>')
  .refine((secret) => Buffer.from(secret.slice('whsec_'.length), 'base64').length >= MIN_SECRET_BYTES, `expected a secret of at least ${MIN_SECRET_BYTES} bytes after whsec_`);

/**
 * The intake's settings. Secrets come from the environment or a file, never from flags or the
 * URL (a command line is visible to every user of the machine).
 */
export const IntakeConfig = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(DEFAULT_INTAKE_PORT),
  listen: z.string().default('0.0.0.0'),
  maxBodyBytes: z.coerce.number().int().positive().max(MAX_BODY_BYTES_LIMIT).default(256 * 1024),
  secrets: z.array(WebhookSecret).default([]),
  token: z.string().min(MIN_TOKEN_CHARS, `expected a token of at least ${MIN_TOKEN_CHARS} characters`).optional(),
  tokenHeader: z.string().default('authorization'),
  seenTtlHours: z.coerce.number().positive().default(48),
  publishTimeoutMs: z.coerce.number().int().positive().default(3_000),
  /** SNS topics (ARNs) whose deliveries `/v1/deliveries/sns` takes. */
  snsTopicArns: z.array(z.string().regex(/^arn:aws(?:-cn|-us-gov)?:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/, 'expected an SNS topic ARN')).default([]),
  /** Pub/Sub push: the audience set on the subscription (usually the endpoint URL). */
  pubsubAudience: z.string().min(1).optional(),
  /** Pub/Sub push: the service accounts the subscriptions push as. */
  pubsubServiceAccounts: z.array(z.string().regex(/^[^@\s]+@[^@\s]+$/, 'expected a service account email')).default([]),
});
export type IntakeConfig = z.infer<typeof IntakeConfig>;

/** Reads the intake's settings from the environment and an optional secrets file (YAML). */
/** The environment variable of each intake setting, to name where a bad value came from. */
const INTAKE_VARIABLES: Readonly<Record<string, string>> = {
  port: 'GPUALERT_INTAKE_PORT', listen: 'GPUALERT_INTAKE_LISTEN', secrets: 'GPUALERT_INTAKE_SECRETS', token: 'GPUALERT_INTAKE_TOKEN', tokenHeader: 'GPUALERT_INTAKE_TOKEN_HEADER',
  maxBodyBytes: 'GPUALERT_INTAKE_MAX_BODY_BYTES', snsTopicArns: 'GPUALERT_INTAKE_SNS_TOPICS', pubsubAudience: 'GPUALERT_INTAKE_PUBSUB_AUDIENCE', pubsubServiceAccounts: 'GPUALERT_INTAKE_PUBSUB_SERVICE_ACCOUNTS',
};

export function intakeConfigFrom(env: Readonly<Record<string, string | undefined>>, flags: { port?: string; listen?: string; secretsFile?: string }, portFlag = '--port'): IntakeConfig {
  // A port is digits (as every command's port is): " 80", "0x50" or "1e3" would otherwise be coerced into one.
  const port = flags.port ?? env.GPUALERT_INTAKE_PORT;
  if (port !== undefined && port !== '' && !/^\d{1,5}$/.test(port)) {
    const where = flags.port !== undefined ? `${portFlag} (flag)` : 'GPUALERT_INTAKE_PORT (environment)';
    throw new Error(`invalid config: ${where}: expected a port 0-65535 (got ${JSON.stringify(port.slice(0, 40))})`);
  }
  const file = flags.secretsFile ?? env.GPUALERT_INTAKE_SECRETS_FILE;
  let fromFile: Record<string, unknown> = {};
  if (file) {
    try {
      fromFile = (parseYaml(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
    } catch (error) {
      throw new Error(`invalid config: cannot read the intake secrets file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  const split = (v: string | undefined) => v?.split(/[\s,]+/).filter((s) => s !== '');
  const raw = {
    ...fromFile,
    ...(flags.port ?? env.GPUALERT_INTAKE_PORT ? { port: flags.port ?? env.GPUALERT_INTAKE_PORT } : {}),
    ...(flags.listen ?? env.GPUALERT_INTAKE_LISTEN ? { listen: flags.listen ?? env.GPUALERT_INTAKE_LISTEN } : {}),
    ...(env.GPUALERT_INTAKE_SECRETS ? { secrets: split(env.GPUALERT_INTAKE_SECRETS) } : {}),
    ...(env.GPUALERT_INTAKE_TOKEN ? { token: env.GPUALERT_INTAKE_TOKEN } : {}),
    ...(env.GPUALERT_INTAKE_TOKEN_HEADER ? { tokenHeader: env.GPUALERT_INTAKE_TOKEN_HEADER } : {}),
    ...(env.GPUALERT_INTAKE_MAX_BODY_BYTES ? { maxBodyBytes: env.GPUALERT_INTAKE_MAX_BODY_BYTES } : {}),
    ...(env.GPUALERT_INTAKE_SNS_TOPICS ? { snsTopicArns: split(env.GPUALERT_INTAKE_SNS_TOPICS) } : {}),
    ...(env.GPUALERT_INTAKE_PUBSUB_AUDIENCE ? { pubsubAudience: env.GPUALERT_INTAKE_PUBSUB_AUDIENCE } : {}),
    ...(env.GPUALERT_INTAKE_PUBSUB_SERVICE_ACCOUNTS ? { pubsubServiceAccounts: split(env.GPUALERT_INTAKE_PUBSUB_SERVICE_ACCOUNTS) } : {}),
  };
  const result = IntakeConfig.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = String(issue.path[0] ?? '');
    // Where the value came from: the flag, else the variable, else the secrets file. Never echo a value here: it may be a secret.
    const flag = field === 'port' || field === 'listen' ? flags[field] : undefined;
    const variable = INTAKE_VARIABLES[field];
    const where = flag !== undefined ? `${field === 'port' ? portFlag : `--${field}`} (flag)` : variable && env[variable] !== undefined ? `${variable} (environment)` : file ? `${field} (${file})` : field;
    throw new Error(`invalid config: ${where}${issue.path.length > 1 ? ` ${issue.path.slice(1).join('.')}` : ''}: ${issue.message} (the intake's)`);
  }
  return result.data;
}
