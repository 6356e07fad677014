import { release } from 'node:os';
import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, TOPICS, type HostInventoryData } from '@gpualert/schema';
import { repeat } from '../repeat.ts';
import { runCommand } from '../run-command.ts';
import { probeCloud, type MetadataProvider } from './cloud-metadata.ts';
import { cudaVersionFrom, INVENTORY_FIELDS, inventoryFrom } from './inventory.ts';

export interface InventoryCollectorOptions {
  readonly bus: Bus;
  readonly host: string;
  readonly labels?: Record<string, string>;
  readonly nvidiaSmi: string;
  readonly timeoutMs: number;
  readonly intervalMs: number;
  readonly metadata: readonly MetadataProvider[];
  readonly metadataEndpoint?: string;
  readonly log: Logger;
}

export const INVENTORY_COLLECTOR_SOURCE = 'collector-inventory/0.1.0';

export async function readInventory(options: Pick<InventoryCollectorOptions, 'nvidiaSmi' | 'timeoutMs' | 'metadata' | 'metadataEndpoint'>): Promise<HostInventoryData> {
  const [query, banner, cloud] = await Promise.all([
    runCommand(options.nvidiaSmi, [`--query-gpu=${INVENTORY_FIELDS.join(',')}`, '--format=csv,noheader'], options.timeoutMs),
    runCommand(options.nvidiaSmi, [], options.timeoutMs),
    probeCloud(options.metadata, options.metadataEndpoint, Math.min(options.timeoutMs, 1_000)),
  ]);
  return inventoryFrom(query.stdout, cudaVersionFrom(banner.stdout), release(), cloud);
}

/** Publishes `host.inventory` at start and whenever the fingerprint changes. */
export function startInventoryCollector(options: InventoryCollectorOptions): { stop(): Promise<void> } {
  let last = '';
  const once = async () => {
    const data = await readInventory(options);
    const fingerprint = JSON.stringify(data);
    if (fingerprint === last) return;
    try {
      await options.bus.publish(TOPICS.hostInventory, [
        envelopeMessage(newEnvelope({ type: 'host.inventory', host: options.host, source: INVENTORY_COLLECTOR_SOURCE, labels: options.labels ?? {}, data })),
      ]);
      last = fingerprint;
      options.log.info({ gpu_model: data.gpu_model, gpu_count: data.gpu_count, driver: data.driver_version }, 'inventory_published');
    } catch (error) {
      options.log.error({ error: String(error) }, 'inventory_publish_failed');
    }
  };
  return repeat(once, () => options.intervalMs);
}
