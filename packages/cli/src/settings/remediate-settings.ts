import { COMMON_SOURCES, CommonConfig, listSetting } from '@gpualert/config';
import { DEFAULT_PARTITION_LABEL } from '@gpualert/executors';
import { z } from 'zod';
import { commandSettings } from './command-settings.ts';
import { READER_SETTINGS } from './common-settings.ts';

const flag = z.preprocess((v) => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v), z.boolean());

/** `gpualert remediate`: the policy, the scheduler it acts on (Slurm or Kubernetes), and a dry run over every rule. */
export const REMEDIATE_SETTINGS = commandSettings({
  command: 'remediate',
  schema: CommonConfig.extend({
    policy: z.string().min(1).optional(),
    executor: z.enum(['slurm', 'kubernetes']).default('slurm'),
    dryRun: flag.default(false),
    scontrol: z.string().min(1).default('scontrol'),
    sinfo: z.string().min(1).default('sinfo'),
    /** Kubernetes: a kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster). */
    kubeconfig: z.string().min(1).optional(),
    /** Kubernetes: a drain also evicts the node's pods (Eviction API, PodDisruptionBudgets respected). */
    evictPods: flag.default(false),
    /** Kubernetes: the node label naming a node's partition for the breaker (then topology.kubernetes.io/zone). */
    nodePartitionLabel: z.string().min(1).max(317).default(DEFAULT_PARTITION_LABEL),
    /** The operator's programs for `reset-gpu` and `reboot`: the program and its first arguments; the host (and GPU) come last. */
    resetGpuCommand: listSetting(z.string().min(1)).optional(),
    rebootCommand: listSetting(z.string().min(1)).optional(),
    /** Where people reach the notifier's console: an approval's chat or pager message links to the action there. */
    consoleUrl: z
      .url({ protocol: /^https?$/ })
      .max(2_000)
      .refine((u) => {
        const p = new URL(u);
        return p.username === '' && p.password === '' && p.search === '' && p.hash === '';
      }, 'a console URL carries no user, password, query or fragment')
      .optional(),
  }),
  sources: {
    ...COMMON_SOURCES,
    policy: { env: 'GPUALERT_REMEDIATION_POLICY' },
    executor: { env: 'GPUALERT_REMEDIATION_EXECUTOR' },
    dryRun: { env: 'GPUALERT_REMEDIATION_DRY_RUN' },
    scontrol: { env: 'GPUALERT_SCONTROL' },
    sinfo: { env: 'GPUALERT_SINFO' },
    kubeconfig: { env: 'GPUALERT_KUBECONFIG' },
    evictPods: { env: 'GPUALERT_KUBERNETES_EVICT_PODS' },
    nodePartitionLabel: { env: 'GPUALERT_KUBERNETES_PARTITION_LABEL' },
    resetGpuCommand: { env: 'GPUALERT_RESET_GPU_COMMAND', flag: false },
    rebootCommand: { env: 'GPUALERT_REBOOT_COMMAND', flag: false },
    consoleUrl: { env: 'GPUALERT_CONSOLE_URL' },
  },
});

/** `gpualert action approve|deny|list`: where the actions topic is (Kafka, or the embedded log for `list`). */
export const ACTION_SETTINGS = commandSettings({ ...READER_SETTINGS, command: 'action' });
