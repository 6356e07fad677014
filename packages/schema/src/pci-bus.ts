import { z } from 'zod';

/** Canonical PCI address: `dddd:bb:dd`, lower case, no function. */
export const PCI_BUS_PATTERN = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}$/;
export const PciBus = z.string().regex(PCI_BUS_PATTERN, 'a PCI address dddd:bb:dd in lower case');

const LOOSE_PCI = /^(?:PCI:)?(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?$/;

/**
 * nvidia-smi's `00000000:3B:00.0`, the kernel's `PCI:0000:3b:00` and DCGM's forms all become
 * `0000:3b:00`; anything else is null.
 */
export function canonicalPciBus(raw: string): string | null {
  const match = LOOSE_PCI.exec(raw.trim());
  if (!match) return null;
  const domain = (match[1] ?? '0000').slice(-4).padStart(4, '0');
  return `${domain}:${match[2]}:${match[3]}`.toLowerCase();
}
