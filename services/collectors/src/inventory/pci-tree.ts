import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fromSysfsLinks, parseTopology } from '@gpualert/kernel-log';
import { MAX_PCI_DEVICES, type PciTopologyData } from '@gpualert/schema';
import { runCommand } from '../run-command.ts';

export interface PciTreeOptions {
  /** Where the PCI devices' links are (`/sys/bus/pci/devices`). */
  readonly sysfsDir?: string;
  /** `lspci`, for hosts whose sysfs cannot be read (a container without /sys). */
  readonly lspci?: string;
  readonly timeoutMs: number;
}

/** sysfs attribute files are a line each; anything longer is not one. */
const MAX_ATTRIBUTE = 64;

/**
 * The host's PCI tree, from sysfs's device links (each names the bridges above its device) and
 * their class/vendor/device files; `lspci -tvnn` when sysfs gives nothing. At most
 * MAX_PCI_DEVICES devices; undefined when neither source answers.
 */
export async function readPciTree(options: PciTreeOptions): Promise<PciTopologyData | undefined> {
  const fromSysfs = await readSysfs(options.sysfsDir ?? '/sys/bus/pci/devices');
  if (fromSysfs) return fromSysfs;
  const result = await runCommand(options.lspci ?? 'lspci', ['-tvnn'], options.timeoutMs);
  if (result.exitCode !== 0 || result.stdout.trim() === '') return undefined;
  const parsed = parseTopology(result.stdout);
  return parsed.ok ? parsed.value.data : undefined;
}

async function readSysfs(dir: string): Promise<PciTopologyData | undefined> {
  let names: string[];
  try {
    names = (await readdir(dir))
      .filter((n) => /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/.test(n))
      .sort()
      .slice(0, MAX_PCI_DEVICES);
  } catch {
    return undefined;
  }
  if (names.length === 0) return undefined;
  const links = await Promise.all(
    names.map(async (name) => {
      const path = join(dir, name);
      let target: string;
      try {
        target = await readlink(path);
      } catch {
        return undefined; // not a link (a test directory, a device gone since readdir)
      }
      const [vendor, device, cls] = await Promise.all(['vendor', 'device', 'class'].map((f) => attribute(join(path, f))));
      return { target, ...(vendor ? { vendor } : {}), ...(device ? { device } : {}), ...(cls ? { class: cls } : {}) };
    }),
  );
  const result = fromSysfsLinks(links.filter((l) => l !== undefined));
  return result.ok ? result.value.data : undefined;
}

async function attribute(path: string): Promise<string | undefined> {
  try {
    const text = await readFile(path, 'utf8');
    return text.length <= MAX_ATTRIBUTE ? text.trim() : undefined;
  } catch {
    return undefined;
  }
}
