import { release } from 'node:os';
import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, TOPICS, type HostInventoryData } from '@gpualert/schema';
import { repeat } from '../repeat.ts';
import { runCommand } from '../run-command.ts';
import { probeCloud, type MetadataProvider } from './cloud-metadata.ts';
import { cudaVersionFrom, INVENTORY_FIELDS, inventoryFrom } from './inventory.ts';
import { readPciTree } from './pci-tree.ts';

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
  /** Record the host's PCI tree (sysfs, `lspci -tvnn` as fallback) so a port's error names the GPUs below it; default true. */
  readonly pciTree?: boolean;
  /** Where the PCI device links are (default `/sys/bus/pci/devices`). */
  readonly sysfsPciDir?: string;
  /** The lspci to run when sysfs gives nothing (default `lspci`). */
  readonly lspci?: string;
}

export const INVENTORY_COLLECTOR_SOURCE = 'collector-inventory/0.1.0';

export async function readInventory(
  options: Pick<InventoryCollectorOptions, 'nvidiaSmi' | 'timeoutMs' | 'metadata' | 'metadataEndpoint' | 'pciTree' | 'sysfsPciDir' | 'lspci'>,
): Promise<HostInventoryData> {
  const [query, banner, cloud, pci] = await Promise.all([
    runCommand(options.nvidiaSmi, [`--query-gpu=${INVENTORY_FIELDS.join(',')}`, '--format=csv,noheader'], options.timeoutMs),
    runCommand(options.nvidiaSmi, [], options.timeoutMs),
    probeCloud(options.metadata, options.metadataEndpoint, Math.min(options.timeoutMs, 1_000)),
    options.pciTree === false
      ? undefined
      : readPciTree({
          timeoutMs: options.timeoutMs,
          ...(options.sysfsPciDir ? { sysfsDir: options.sysfsPciDir } : {}),
          ...(options.lspci ? { lspci: options.lspci } : {}),
        }),
  ]);
  const inventory = inventoryFrom(query.stdout, cudaVersionFrom(banner.stdout), release(), cloud);
  if (pci) inventory.pci_topology = pci;
  return inventory;
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
