import { COMMON_SOURCES, CommonConfig } from '@gpualert/config';
import { INTAKE_SOURCES, IntakeConfig, intakeSecretsFile } from '@gpualert/intake';
import { commandSettings } from './command-settings.ts';

/** `gpualert intake`: the webhook server's port and address (flags), its secrets (environment or its secrets file). */
export const INTAKE_SETTINGS = commandSettings({
  command: 'intake',
  schema: CommonConfig.extend(IntakeConfig.shape),
  sources: { ...COMMON_SOURCES, ...INTAKE_SOURCES },
  ownFiles: (options, env) => intakeSecretsFile(options.secretsFile, env),
});
