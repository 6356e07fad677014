import { intakeConfigFrom, startIntake } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { openInfrastructure, untilSignal } from '@gpualert/runtime';
import { CliError, EXIT } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';

/** `gpualert intake`: the provider webhook server on its own. */
export async function intake(options: Record<string, unknown>): Promise<number> {
  const config = commonConfig(options);
  let intakeConfig;
  try {
    intakeConfig = intakeConfigFrom(process.env, options as { port?: string; listen?: string; secretsFile?: string });
  } catch (error) {
    throw new CliError(`gpualert intake: ${(error as Error).message}`);
  }
  const log = createLogger({ name: 'intake', level: config.logLevel });
  const infra = await openInfrastructure(config, log);
  const service = await startIntake(intakeConfig, { bus: infra.bus, store: infra.store, log });
  const signal = await untilSignal();
  log.info({ signal }, 'intake_stopping');
  await service.stop();
  await infra.close();
  return EXIT.ok;
}
