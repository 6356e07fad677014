import { busOf, PciTopology } from '@gpualert/kernel-log';
import type { PciTopologyData, PciTreeDevice } from '@gpualert/schema';

/**
 * The part of a host's PCI tree the engine keeps in its state: the GPUs and NVSwitches (by the
 * tree's own ids or names, or an address the inventory lists as a GPU) and every bridge above
 * them. A few dozen devices of the few hundred a large server lists, saved with every batch;
 * enough for a port's AER error to name the GPUs below it.
 */
export function towardGpus(data: PciTopologyData, inventoryBuses: ReadonlySet<string>): PciTreeDevice[] {
  const tree = new PciTopology(data);
  const keep = new Set<string>();
  for (const device of data.devices) {
    const gpu = tree.isGpu(device.address) || (device.address.endsWith('.0') && inventoryBuses.has(busOf(device.address)));
    if (!gpu && !tree.isNvSwitch(device.address)) continue;
    keep.add(device.address);
    for (const bridge of tree.upstreamOf(device.address)) keep.add(bridge);
  }
  return data.devices.filter((d) => keep.has(d.address));
}
