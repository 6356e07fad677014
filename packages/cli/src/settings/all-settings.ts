import type { z } from 'zod';
import type { CommandSettings } from './command-settings.ts';
import { AGENT_SETTINGS } from './agent-settings.ts';
import { BMC_SETTINGS, JOB_REPORT_SETTINGS, PROMETHEUS_SETTINGS } from './collector-settings.ts';
import { COMMON_SETTINGS, READER_SETTINGS } from './common-settings.ts';
import { ENGINE_SETTINGS } from './engine-settings.ts';
import { INTAKE_SETTINGS } from './intake-settings.ts';
import { NOTIFIER_SETTINGS } from './notifier-settings.ts';
import { UP_SETTINGS } from './up-settings.ts';
import { ACTION_SETTINGS, REMEDIATE_SETTINGS } from './remediate-settings.ts';

/** Every command's settings, by the name `gpualert config show --command` takes. */
export const ALL_SETTINGS: ReadonlyMap<string, CommandSettings<z.ZodObject>> = new Map<string, CommandSettings<z.ZodObject>>(
  [
    UP_SETTINGS,
    AGENT_SETTINGS,
    ENGINE_SETTINGS,
    NOTIFIER_SETTINGS,
    INTAKE_SETTINGS,
    PROMETHEUS_SETTINGS,
    BMC_SETTINGS,
    JOB_REPORT_SETTINGS,
    READER_SETTINGS,
    REMEDIATE_SETTINGS,
    ACTION_SETTINGS,
    COMMON_SETTINGS,
  ].map((settings) => [settings.command, settings]),
);
