import { COMMON_SOURCES, CommonConfig, listSetting } from '@gpualert/config';
import { z } from 'zod';
import { commandSettings } from './command-settings.ts';
import { READER_SETTINGS } from './common-settings.ts';

/** `gpualert remediate`: the policy, the scheduler it acts on, and a dry run over every rule. */
export const REMEDIATE_SETTINGS = commandSettings({
  command: 'remediate',
  schema: CommonConfig.extend({
    policy: z.string().min(1).optional(),
    executor: z.enum(['slurm']).default('slurm'),
    dryRun: z.preprocess((v) => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v), z.boolean()).default(false),
    scontrol: z.string().min(1).default('scontrol'),
    sinfo: z.string().min(1).default('sinfo'),
    /** The operator's programs for `reset-gpu` and `reboot`: the program and its first arguments; the host (and GPU) come last. */
    resetGpuCommand: listSetting(z.string().min(1)).optional(),
    rebootCommand: listSetting(z.string().min(1)).optional(),
  }),
  sources: {
    ...COMMON_SOURCES,
    policy: { env: 'GPUALERT_REMEDIATION_POLICY' },
    executor: { env: 'GPUALERT_REMEDIATION_EXECUTOR' },
    dryRun: { env: 'GPUALERT_REMEDIATION_DRY_RUN' },
    scontrol: { env: 'GPUALERT_SCONTROL' },
    sinfo: { env: 'GPUALERT_SINFO' },
    resetGpuCommand: { env: 'GPUALERT_RESET_GPU_COMMAND', flag: false },
    rebootCommand: { env: 'GPUALERT_REBOOT_COMMAND', flag: false },
  },
});

/** `gpualert action approve|deny|list`: where the actions topic is (Kafka, or the embedded log for `list`). */
export const ACTION_SETTINGS = commandSettings({ ...READER_SETTINGS, command: 'action' });
