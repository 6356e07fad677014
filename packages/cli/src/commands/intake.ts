import { intakeConfigFrom, startIntake } from '@gpualert/intake';
import { CliError } from '../cli-error.ts';
import { runService } from '../run-service.ts';

/** `gpualert intake`: the provider webhook server on its own. */
export async function intake(options: Record<string, unknown>): Promise<number> {
  let intakeConfig;
  try {
    intakeConfig = intakeConfigFrom(process.env, options as { port?: string; listen?: string; secretsFile?: string });
  } catch (error) {
    throw new CliError(`gpualert intake: ${(error as Error).message}`);
  }
  return runService('intake', options, ({ bus, store }, log) => startIntake(intakeConfig, { bus, store, log }));
}
