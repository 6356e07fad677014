import { canonicalPciBus, type HostInventoryData, type InventoryGpu } from '@gpualert/schema';
import { isUnavailable } from '@gpualert/gpu-metrics';

/** The fields the inventory asks nvidia-smi for, in this order. */
export const INVENTORY_FIELDS = ['index', 'uuid', 'pci.bus_id', 'name', 'serial', 'vbios_version', 'driver_version'] as const;

export interface CloudIdentity {
  readonly provider: string;
  readonly instanceId?: string;
  readonly instanceType?: string;
}

/** Builds the host's fingerprint from `--query-gpu` rows, the CUDA version and the kernel. */
export function inventoryFrom(
  queryCsv: string,
  cudaVersion: string | undefined,
  kernel: string | undefined,
  cloud: CloudIdentity | undefined,
): HostInventoryData {
  const gpus: InventoryGpu[] = [];
  let driver = '';
  let vbios: string | undefined;
  for (const line of queryCsv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== INVENTORY_FIELDS.length) continue;
    const [index, uuid, bus, name, serial, vbiosVersion, driverVersion] = cells as [string, string, string, string, string, string, string];
    const pci = canonicalPciBus(bus);
    if (!/^\d+$/.test(index) || !pci) continue;
    const gpu: InventoryGpu = { index: Number(index), uuid, pci_bus: pci, name };
    if (!isUnavailable(serial)) gpu.serial = serial;
    gpus.push(gpu);
    driver ||= driverVersion;
    if (!isUnavailable(vbiosVersion)) vbios ??= vbiosVersion;
  }
  const inventory: HostInventoryData = {
    gpu_model: gpus[0]?.name ?? 'none',
    gpu_count: gpus.length,
    driver_version: driver || 'unknown',
    cuda_version: cudaVersion ?? 'unknown',
    gpus: gpus.sort((a, b) => a.index - b.index),
  };
  if (vbios) inventory.vbios = vbios;
  if (kernel) inventory.kernel = kernel;
  if (cloud) {
    inventory.provider = cloud.provider;
    if (cloud.instanceId) inventory.instance_id = cloud.instanceId;
    if (cloud.instanceType) inventory.instance_type = cloud.instanceType;
  }
  return inventory;
}

/** `CUDA Version: 12.4` from nvidia-smi's banner or `-q` output. */
export function cudaVersionFrom(text: string): string | undefined {
  return /CUDA Version\s*:\s*([\d.]+)/.exec(text)?.[1];
}
