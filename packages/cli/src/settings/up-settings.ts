import { COMMON_SOURCES, CommonConfig } from '@gpualert/config';
import { INTAKE_SOURCES, IntakeConfig, intakeSecretsFile } from '@gpualert/intake';
import { z } from 'zod';
import { prefixed } from './command-settings.ts';
import { commandSettings } from './command-settings.ts';
import { ENGINE_SHAPE, ENGINE_SOURCES } from './engine-settings.ts';
import { NOTIFIER_SHAPE, NOTIFIER_SOURCES } from './notifier-settings.ts';

const intake = prefixed('intake', IntakeConfig.shape, INTAKE_SOURCES, { port: '--intake-port' });
const notifier = prefixed('notifier', NOTIFIER_SHAPE, NOTIFIER_SOURCES, { port: '--notifier-port' });
const engine = prefixed('engine', ENGINE_SHAPE, ENGINE_SOURCES, { port: '--engine-port' });

/**
 * `gpualert up`: every service's settings in one schema, each service's under its name
 * (`intakePort`, `notifierToken`, `engineListen`…) with the same variables as when it runs alone.
 */
export const UP_SETTINGS = commandSettings({
  command: 'up',
  schema: CommonConfig.extend({
    rules: z.string().min(1).optional(),
    /** None: the embedded routes, which page nobody (the console only). */
    routes: z.string().min(1).optional(),
    dataDir: z.string().min(1).optional(),
    ...intake.shape,
    ...notifier.shape,
    ...engine.shape,
  }),
  sources: {
    ...COMMON_SOURCES,
    rules: {},
    routes: { env: 'GPUALERT_ROUTES' },
    dataDir: { env: 'GPUALERT_DATA_DIR' },
    ...intake.sources,
    ...notifier.sources,
    ...engine.sources,
  },
  ownFiles: (_options, env) => intakeSecretsFile(undefined, env).map((path) => ({ path, prefix: 'intake' })),
});
