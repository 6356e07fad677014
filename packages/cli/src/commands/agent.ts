import { hostname } from 'node:os';
import { KafkaBus } from '@gpualert/bus/kafka';
import { createAgentServer, dcgmSource, nvidiaSmiSource, startAgent, type AgentPlan, type MetadataProvider } from '@gpualert/collectors';
import { loadXidCatalog } from '@gpualert/rules';
import { TOPICS } from '@gpualert/schema';
import { loadSettings } from '../settings/command-settings.ts';
import { AGENT_SETTINGS } from '../settings/agent-settings.ts';
import { CliError, errnoCode } from '../cli-error.ts';
import { runService } from '../run-service.ts';
import { attributionOf, bootTimeMs, chooseSource, gpuIndexByPci } from './collect.ts';
import { firstRuleError } from './rule-error.ts';

/**
 * `gpualert agent`: every collector a GPU host needs in one process (GPU metrics, kernel log,
 * inventory, and the provider's maintenance notices when `--provider` names one), one `/healthz`
 * and one `/metrics`.
 */
export async function agent(options: Record<string, unknown>): Promise<number> {
  const config = loadSettings(AGENT_SETTINGS, options);
  // Set exactly when the GPUs are read from DCGM, which needs it.
  const dcgmUrl = config.gpuSource === 'dcgm' ? config.dcgmUrl : undefined;
  if (config.gpuSource === 'dcgm' && !dcgmUrl) throw new CliError("gpualert agent: --gpu-source dcgm needs --dcgm-url, the exporter's /metrics URL");
  const host = config.host ?? hostname();
  const catalog = config.kernelSource === 'none' ? undefined : loadXidCatalog(config.catalog);
  if (catalog && !catalog.ok) throw new CliError(`gpualert agent: ${firstRuleError(catalog.errors)}`);
  const kernelSource =
    config.kernelSource === 'none'
      ? undefined
      : await chooseSource({
          ...(config.kernelSource === 'auto' ? {} : { source: config.kernelSource }),
          ...(config.kernelFile ? { file: config.kernelFile } : {}),
        });
  const metadata: MetadataProvider[] = config.metadata === 'auto' ? ['aws', 'gcp', 'azure'] : config.metadata === 'none' ? [] : [config.metadata];
  return runService(
    'agent',
    config,
    async ({ bus, store }, log) => {
      const gpu =
        config.gpuSource === 'none'
          ? undefined
          : dcgmUrl
            ? dcgmSource(dcgmUrl, host, config.gpuTimeout)
            : await nvidiaSmiSource({ binary: config.nvidiaSmi, timeoutMs: config.gpuTimeout, ...attributionOf(options) });
      const boot = bootTimeMs();
      const plan: AgentPlan = {
        host,
        labels: config.labels,
        ...(gpu ? { gpu: { source: gpu, intervalMs: config.gpuInterval } } : {}),
        ...(kernelSource && catalog?.ok
          ? {
              kernel: {
                source: kernelSource,
                catalog: catalog.value,
                gpuIndexByPci: config.gpuSource === 'nvidia-smi' ? await gpuIndexByPci(config.nvidiaSmi) : new Map(),
                ...(boot !== undefined ? { bootTimeMs: boot } : {}),
              },
            }
          : {}),
        inventory: { nvidiaSmi: config.nvidiaSmi, intervalMs: config.inventoryInterval, timeoutMs: config.gpuTimeout, metadata },
        ...(config.provider !== 'none'
          ? {
              provider: {
                name: config.provider,
                intervalMs: config.providerInterval,
                timeoutMs: config.gpuTimeout,
                ...(config.providerEndpoint ? { endpoint: config.providerEndpoint } : {}),
              },
            }
          : {}),
      };
      // A GPU host only produces, into topics the services create: where they do not exist yet (a
      // broker without auto-creation, the services not started), say so at once, and that the
      // publishes wait for them (retried; what a collector cannot hand over meanwhile is dropped, and
      // /healthz says samples are not getting through). Not awaited: the agent starts regardless.
      if (bus instanceof KafkaBus) {
        const writes = [
          ...(plan.gpu ? [TOPICS.gpuSamples] : []),
          ...(plan.kernel ? [TOPICS.kernelEvents] : []),
          TOPICS.hostInventory,
          ...(plan.provider ? [TOPICS.providerEvents] : []),
        ];
        void bus.missingTopics(writes).then(
          (missing) => {
            if (missing.length > 0) log.warn({ topics: missing, waiting: true }, 'topics_missing');
          },
          (error: unknown) => log.warn({ error: String(error) }, 'topics_unchecked'),
        );
      }
      const running = await startAgent(plan, { bus, store, log });
      const server = createAgentServer(running);
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(config.port, config.listen, resolve);
        });
      } catch (error) {
        await running.stop();
        const code = errnoCode(error);
        if (code === 'EADDRINUSE') throw new CliError(`gpualert agent: port ${config.port} is in use; choose another with --port or GPUALERT_AGENT_PORT`, 1);
        throw error;
      }
      const address = server.address();
      log.info({ host, collectors: running.collectors, port: typeof address === 'object' && address ? address.port : config.port }, 'agent_started');
      return {
        async stop() {
          server.closeAllConnections();
          server.close();
          await running.stop();
        },
      };
      // A GPU host only produces: the services create the topics, and the agent starts without
      // waiting on Kafka's admin round trips (its first publish connects).
    },
    { createTopics: false },
  );
}
