import { startIntake } from '@gpualert/intake';
import { CliError, errnoCode } from '../cli-error.ts';
import { runService } from '../run-service.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { INTAKE_SETTINGS } from '../settings/intake-settings.ts';

/** `gpualert intake`: the provider webhook server on its own. */
export async function intake(options: Record<string, unknown>): Promise<number> {
  const intakeConfig = loadSettings(INTAKE_SETTINGS, options);
  return runService('intake', intakeConfig, async ({ bus, store }, log) => {
    try {
      return await startIntake(intakeConfig, { bus, store, log });
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'EADDRINUSE' || code === 'EACCES') {
        const why = code === 'EADDRINUSE' ? 'is in use' : 'is not allowed';
        throw new CliError(`gpualert intake: port ${intakeConfig.port} ${why}; choose another with --port or GPUALERT_INTAKE_PORT (0 picks a free one)`, 1);
      }
      throw error;
    }
  });
}
