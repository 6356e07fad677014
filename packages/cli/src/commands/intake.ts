import { intakeConfigFrom, startIntake } from '@gpualert/intake';
import { ConfigError } from '@gpualert/config';
import { CliError } from '../cli-error.ts';
import { runService } from '../run-service.ts';

/** `gpualert intake`: the provider webhook server on its own. */
export async function intake(options: Record<string, unknown>): Promise<number> {
  let intakeConfig;
  try {
    intakeConfig = intakeConfigFrom(process.env, options as { port?: string; listen?: string; secretsFile?: string });
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return runService('intake', options, async ({ bus, store }, log) => {
    try {
      return await startIntake(intakeConfig, { bus, store, log });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' || code === 'EACCES') {
        const why = code === 'EADDRINUSE' ? 'is in use' : 'is not allowed';
        throw new CliError(`gpualert intake: port ${intakeConfig.port} ${why}; choose another with --port or GPUALERT_INTAKE_PORT (0 picks a free one)`, 1);
      }
      throw error;
    }
  });
}
