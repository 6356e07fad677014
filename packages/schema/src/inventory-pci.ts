import { z } from 'zod';

/** A full PCI address with its function: `dddd:bb:dd.f`, lower case (a port or bridge needs the function). */
export const PCI_ADDRESS_PATTERN = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;
export const PciAddress = z.string().regex(PCI_ADDRESS_PATTERN, 'a PCI address dddd:bb:dd.f in lower case');

/** The most devices one host's PCI tree may list (large 8-GPU servers have a few hundred). */
export const MAX_PCI_DEVICES = 4096;

/** One device of the host's PCI tree, with the bridge (switch or root port) it sits below. */
export const PciTreeDevice = z.object({
  address: PciAddress,
  parent: PciAddress.optional(),
  vendor: z
    .string()
    .regex(/^[0-9a-f]{4}$/)
    .optional(),
  device: z
    .string()
    .regex(/^[0-9a-f]{4}$/)
    .optional(),
  /** The class code as sysfs gives it without `0x` (`030200` a 3D controller, `060400` a PCI bridge). */
  class: z
    .string()
    .regex(/^[0-9a-f]{4,6}$/)
    .optional(),
  name: z.string().max(200).optional(),
});
export type PciTreeDevice = z.infer<typeof PciTreeDevice>;

/** The host's PCI tree, flat: each device names its parent bridge. */
export const PciTopologyData = z.object({
  source: z.enum(['sysfs', 'lspci', 'json']),
  devices: z.array(PciTreeDevice).max(MAX_PCI_DEVICES),
});
export type PciTopologyData = z.infer<typeof PciTopologyData>;
