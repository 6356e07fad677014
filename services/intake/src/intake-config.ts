import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/**
 * The intake's default port: clear of what GPU hosts and their monitoring usually hold already
 * (8080 for everything, 9090 Prometheus, 9093/9094 Alertmanager, 9100 node exporter, 9400 DCGM
 * exporter).
 */
export const DEFAULT_INTAKE_PORT = 9468;

/**
 * The intake's settings. Secrets come from the environment or a file, never from flags or the
 * URL (a command line is visible to every user of the machine).
 */
export const IntakeConfig = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(DEFAULT_INTAKE_PORT),
  listen: z.string().default('0.0.0.0'),
  maxBodyBytes: z.coerce.number().int().positive().default(256 * 1024),
  secrets: z.array(z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/, 'expected whsec_<base64>')).default([]),
  token: z.string().min(16, 'expected a token of at least 16 characters').optional(),
  tokenHeader: z.string().default('authorization'),
  seenTtlHours: z.coerce.number().positive().default(48),
  publishTimeoutMs: z.coerce.number().int().positive().default(3_000),
});
export type IntakeConfig = z.infer<typeof IntakeConfig>;

/** Reads the intake's settings from the environment and an optional secrets file (YAML). */
export function intakeConfigFrom(env: Readonly<Record<string, string | undefined>>, flags: { port?: string; listen?: string; secretsFile?: string }): IntakeConfig {
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
  };
  const result = IntakeConfig.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    // Never echo a value here: it may be a secret.
    throw new Error(`invalid config: intake ${issue.path.join('.')}: ${issue.message}`);
  }
  return result.data;
}
