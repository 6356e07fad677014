import { COMMON_SOURCES, CommonConfig, type SettingSources } from '@gpualert/config';
import { commandSettings } from './command-settings.ts';
import { z } from 'zod';

const UNITS = new Map<string, number>([
  ['ms', 1],
  ['s', 1_000],
  ['m', 60_000],
  ['h', 3_600_000],
]);
/** Longest interval or timeout the agent takes: a day (a longer one is a typo, not a plan). */
export const MAX_AGENT_DURATION_MS = 86_400_000;

const duration = z.union([z.string(), z.number()]).transform((value, context) => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(String(value).trim());
  // A unit outside the table is no duration: NaN fails the check below.
  const ms = match ? Math.round(Number(match[1]) * (UNITS.get(match[2] ?? 's') ?? NaN)) : NaN;
  if (!(ms > 0 && ms <= MAX_AGENT_DURATION_MS)) {
    context.addIssue({ code: 'custom', message: 'expected a duration like 500ms, 10s or 5m, at most 24h' });
    return z.NEVER;
  }
  return ms;
});

const labels = z.union([z.array(z.string()), z.record(z.string(), z.string())]).transform((value, context) => {
  // A label key is data: it never becomes a key of a plain object's prototype chain.
  const out = Object.create(null) as Record<string, string>;
  const pairs = Array.isArray(value)
    ? value.map((p) => {
        const [k = '', ...rest] = p.split('=');
        return [k, rest.join('=')] as const;
      })
    : Object.entries(value);
  for (const [key, v] of pairs) {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(key)) {
      context.addIssue({ code: 'custom', message: `expected key=value with a label name of letters, digits and _ (not "${key}")` });
      return z.NEVER;
    }
    out[key] = v;
  }
  return out;
});

/**
 * `gpualert agent`'s settings: flags, then the environment, then `--config FILE` (the same file
 * the common settings come from, camelCase keys). Defaults are the ones a GPU host wants.
 */
export const AgentConfig = z.object({
  host: z.string().min(1).max(253).optional(),
  labels: labels.prefault([]),
  nvidiaSmi: z.string().default('nvidia-smi'),
  gpuSource: z.enum(['nvidia-smi', 'dcgm', 'none']).default('nvidia-smi'),
  dcgmUrl: z.url({ protocol: /^https?$/ }).optional(),
  gpuInterval: duration.default(10_000),
  gpuTimeout: duration.default(5_000),
  kernelSource: z.enum(['auto', 'kmsg', 'journal', 'dmesg', 'file', 'none']).default('auto'),
  kernelFile: z.string().optional(),
  catalog: z.string().optional(),
  metadata: z.enum(['auto', 'none', 'aws', 'gcp', 'azure']).default('auto'),
  inventoryInterval: duration.default(300_000),
  provider: z.enum(['none', 'aws-imds', 'gcp', 'azure']).default('none'),
  providerEndpoint: z.url({ protocol: /^https?$/ }).optional(),
  providerInterval: duration.default(10_000),
  port: z.coerce.number().int().min(0).max(65535).default(9469),
  listen: z.string().default('0.0.0.0'),
});
export type AgentConfig = z.infer<typeof AgentConfig>;

export const AGENT_SOURCES: SettingSources<AgentConfig> = {
  host: { env: 'GPUALERT_HOST' },
  labels: { env: 'GPUALERT_AGENT_LABELS' },
  nvidiaSmi: { env: 'GPUALERT_NVIDIA_SMI' },
  gpuSource: { env: 'GPUALERT_AGENT_GPU_SOURCE' },
  dcgmUrl: { env: 'GPUALERT_AGENT_DCGM_URL' },
  gpuInterval: { env: 'GPUALERT_AGENT_GPU_INTERVAL' },
  gpuTimeout: { env: 'GPUALERT_AGENT_GPU_TIMEOUT' },
  kernelSource: { env: 'GPUALERT_AGENT_KERNEL_SOURCE' },
  kernelFile: { env: 'GPUALERT_AGENT_KERNEL_FILE' },
  catalog: { env: 'GPUALERT_XID_CATALOG' },
  metadata: { env: 'GPUALERT_AGENT_METADATA' },
  inventoryInterval: { env: 'GPUALERT_AGENT_INVENTORY_INTERVAL' },
  provider: { env: 'GPUALERT_AGENT_PROVIDER' },
  providerEndpoint: { env: 'GPUALERT_AGENT_PROVIDER_ENDPOINT' },
  providerInterval: { env: 'GPUALERT_AGENT_PROVIDER_INTERVAL' },
  port: { env: 'GPUALERT_AGENT_PORT' },
  listen: { env: 'GPUALERT_AGENT_LISTEN' },
};

/** `gpualert agent`: the common settings and the agent's own. */
export const AGENT_SETTINGS = commandSettings({
  command: 'agent',
  schema: CommonConfig.extend(AgentConfig.shape),
  sources: { ...COMMON_SOURCES, ...AGENT_SOURCES, labels: { env: 'GPUALERT_AGENT_LABELS', flag: '--label' } },
});
