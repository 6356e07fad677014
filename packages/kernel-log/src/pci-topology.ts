import { canonicalPciBus, MAX_PCI_DEVICES, PciTopologyData, type PciTreeDevice } from '@gpualert/schema';

/** What a port has below it: the GPUs and NVSwitches, by full address. */
export interface BelowPort {
  readonly gpus: readonly string[];
  readonly nvswitches: readonly string[];
}

export type TopologyResult = { ok: true; value: PciTopology } | { ok: false; error: string };

const NVIDIA = '10de';
/** NVSwitch device ids (first, second and third generation), for trees that give ids but no class. */
const NVSWITCH_IDS = new Set(['1ac0', '1ac1', '1ac2', '1af1', '22a3']);
/** NVIDIA functions that are not GPUs, for `lspci -tv` trees that give neither class nor id. */
const NOT_A_GPU =
  /NVSwitch|Audio|USB|Serial bus|UCSI|Bridge|Memory Controller|LPC|SMBus|Co-processor|Ethernet|AHCI|SATA|IDE|OHCI|EHCI|ISA|PCI Express|Root Port/i;
/** The longest text parsed as a topology (a large server's `lspci -tvnn` is under 100 KB). */
const MAX_TOPOLOGY_TEXT = 4_000_000;

/**
 * The host's PCI tree: which devices sit below which bridge, and so which GPUs and NVSwitches a
 * PCIe switch or root port feeds. Built from sysfs device links, `lspci -t[v[nn]]` output or the
 * JSON the inventory records; pure.
 */
export class PciTopology {
  private readonly byAddress = new Map<string, PciTreeDevice>();
  private readonly children = new Map<string, string[]>();

  constructor(readonly data: PciTopologyData) {
    for (const device of data.devices) {
      this.byAddress.set(device.address, device);
      if (device.parent !== undefined) {
        const list = this.children.get(device.parent);
        if (list) list.push(device.address);
        else this.children.set(device.parent, [device.address]);
      }
    }
  }

  get size(): number {
    return this.byAddress.size;
  }

  has(address: string): boolean {
    return this.byAddress.has(address);
  }

  /** A bridge: something is (or could be) below it. */
  isBridge(address: string): boolean {
    const device = this.byAddress.get(address);
    if (!device) return false;
    return this.children.has(address) || (device.class !== undefined && device.class.startsWith('0604'));
  }

  isGpu(address: string): boolean {
    const device = this.byAddress.get(address);
    if (!device || this.children.has(address)) return false;
    if (device.vendor !== undefined && device.vendor !== NVIDIA) return false;
    if (device.class !== undefined) return device.class.startsWith('0300') || device.class.startsWith('0302');
    if (device.device !== undefined && NVSWITCH_IDS.has(device.device)) return false;
    const name = device.name ?? '';
    if (device.vendor === undefined && !/^nvidia corporation/i.test(name)) return false;
    return !NOT_A_GPU.test(name);
  }

  isNvSwitch(address: string): boolean {
    const device = this.byAddress.get(address);
    if (!device || (device.vendor !== undefined && device.vendor !== NVIDIA)) return false;
    if (device.device !== undefined && NVSWITCH_IDS.has(device.device)) return true;
    if (device.vendor === NVIDIA && device.class !== undefined && device.class.startsWith('0680')) return true;
    return /NVSwitch/.test(device.name ?? '');
  }

  /**
   * The GPUs and NVSwitches anywhere below a bridge (every level of switches), in address order.
   * `knownGpu` adds what the inventory knows (a tree from `lspci -t` names no device).
   */
  below(port: string, knownGpu?: (address: string) => boolean): BelowPort {
    const gpus: string[] = [];
    const nvswitches: string[] = [];
    const queue = [...(this.children.get(port) ?? [])];
    const seen = new Set<string>(queue);
    // Each device is visited once, so a corrupt tree with a cycle still ends.
    let visited = 0;
    for (const address of queue) {
      // it grows as it is read: breadth first
      if (visited++ >= MAX_PCI_DEVICES) break;
      if (this.isGpu(address) || knownGpu?.(address) === true) gpus.push(address);
      else if (this.isNvSwitch(address)) nvswitches.push(address);
      for (const child of this.children.get(address) ?? []) {
        if (!seen.has(child)) {
          seen.add(child);
          queue.push(child);
        }
      }
    }
    return { gpus: gpus.sort(), nvswitches: nvswitches.sort() };
  }

  /** Every GPU with the chain of bridges above it, nearest first. */
  upstreamOf(address: string): string[] {
    const chain: string[] = [];
    let parent = this.byAddress.get(address)?.parent;
    while (parent !== undefined && chain.length < 64 && !chain.includes(parent)) {
      chain.push(parent);
      parent = this.byAddress.get(parent)?.parent;
    }
    return chain;
  }
}

/** The canonical `dddd:bb:dd` a GPU event carries, from a full address. */
export function busOf(address: string): string {
  return canonicalPciBus(address) ?? address;
}

/**
 * Reads a topology in any form an operator has: the inventory's JSON (`{ source, devices }`),
 * `lspci -t`/`-tv`/`-tvnn` output, or a sysfs listing (`ls -l /sys/bus/pci/devices/` or the
 * link targets one per line).
 */
export function parseTopology(text: string): TopologyResult {
  if (text.length > MAX_TOPOLOGY_TEXT) return { ok: false, error: `the topology is over ${MAX_TOPOLOGY_TEXT} characters` };
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (error) {
      return { ok: false, error: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
    }
    const parsed = PciTopologyData.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return { ok: false, error: `not a PCI tree: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'}` };
    }
    return { ok: true, value: new PciTopology(parsed.data) };
  }
  if (/\/devices\/pci[0-9a-f]{4}:[0-9a-f]{2}\//.test(trimmed)) return fromSysfsListing(trimmed);
  return fromLspciTree(text); // untrimmed: the tree's columns are its structure
}

const FULL_ADDRESS = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;

/** sysfs: each device's link target lists the bridges above it, root first. */
export function fromSysfsLinks(links: readonly { target: string; vendor?: string; device?: string; class?: string }[]): TopologyResult {
  if (links.length > MAX_PCI_DEVICES) return { ok: false, error: `over ${MAX_PCI_DEVICES} PCI devices` };
  const devices: PciTreeDevice[] = [];
  for (const link of links) {
    const parts = link.target
      .split('/')
      .filter((p) => FULL_ADDRESS.test(p.toLowerCase()))
      .map((p) => p.toLowerCase());
    const address = parts.at(-1);
    if (address === undefined) continue;
    const device: PciTreeDevice = { address };
    const parent = parts.at(-2);
    if (parent !== undefined) device.parent = parent;
    const vendor = hex(link.vendor, 4);
    if (vendor) device.vendor = vendor;
    const id = hex(link.device, 4);
    if (id) device.device = id;
    const cls = hex(link.class, 6);
    if (cls) device.class = cls;
    devices.push(device);
  }
  if (devices.length === 0) return { ok: false, error: 'no PCI device links' };
  return { ok: true, value: new PciTopology({ source: 'sysfs', devices }) };
}

function fromSysfsListing(text: string): TopologyResult {
  const links = text
    .split('\n')
    .map((line) => ({ target: line.includes(' -> ') ? line.slice(line.indexOf(' -> ') + 4).trim() : line.trim() }))
    .filter((l) => l.target !== '');
  return fromSysfsLinks(links);
}

function hex(raw: string | undefined, digits: number): string | undefined {
  if (raw === undefined) return undefined;
  const value = raw.trim().toLowerCase().replace(/^0x/, '');
  return new RegExp(`^[0-9a-f]{${digits}}$`).test(value) ? value : undefined;
}

interface BusContext {
  readonly domain: string;
  readonly bus: string;
  readonly bridge?: string;
}

const TREE_TOKEN = /\[(?:([0-9a-f]{4}):)?([0-9a-f]{2})(?:-[0-9a-f]{2})?\]|([0-9a-f]{2})\.([0-7])/g;
const NAME_START = /[0-9a-f]{2}\.[0-7] {2}(?=\S)/;
const AFTER_DEVICE = /^[0-9a-f]{2}\.[0-7]-$/;
const IDS = /\[([0-9a-f]{4}):([0-9a-f]{4})\]/g;

/**
 * `lspci -t` draws each bus's devices at one column: a bus marker (`[0000:00]` for a root bus,
 * `-[05]` or `-[04-10]` after a bridge for its secondary bus) sets the bus of the devices that
 * follow it at the next device column, on this line and on the lines below.
 */
export function fromLspciTree(text: string): TopologyResult {
  const devices: PciTreeDevice[] = [];
  const byColumn = new Map<number, BusContext>();
  let lineNo = 0;
  for (const raw of text.split('\n')) {
    lineNo += 1;
    const line = raw.replace(/\r$/, '');
    if (!/[[.]/.test(line)) continue;
    const nameAt = NAME_START.exec(line);
    const tree = nameAt ? line.slice(0, nameAt.index + 4) : line;
    const name = nameAt ? line.slice(nameAt.index + nameAt[0].length).trim() : undefined;
    let pending: BusContext | undefined;
    let last: PciTreeDevice | undefined;
    for (const token of tree.matchAll(TREE_TOKEN)) {
      const at = token.index;
      if (token[2] !== undefined) {
        // `01.0-[05]`: a marker right after a device is that bridge's secondary bus; any other is a root bus.
        const secondaryOf = last !== undefined && AFTER_DEVICE.test(tree.slice(Math.max(0, at - 5), at)) ? last : undefined;
        const domain = token[1] ?? (secondaryOf ? secondaryOf.address.slice(0, 4) : '0000');
        pending = secondaryOf ? { domain, bus: token[2], bridge: secondaryOf.address } : { domain, bus: token[2] };
        // A device with a secondary bus is a bridge, even an empty slot's port with nothing below it.
        if (secondaryOf && secondaryOf.class === undefined) secondaryOf.class = '0604';
        continue;
      }
      const context = pending ?? byColumn.get(at);
      if (pending) {
        byColumn.set(at, pending);
        for (const column of [...byColumn.keys()]) if (column > at) byColumn.delete(column);
        pending = undefined;
      }
      if (!context) return { ok: false, error: `line ${lineNo}: a device at column ${at} with no bus above it (not lspci -t output?)` };
      const device: PciTreeDevice = { address: `${context.domain}:${context.bus}:${token[3]}.${token[4]}` };
      if (context.bridge !== undefined) device.parent = context.bridge;
      devices.push(device);
      if (devices.length > MAX_PCI_DEVICES) return { ok: false, error: `over ${MAX_PCI_DEVICES} PCI devices` };
      last = device;
    }
    if (last && name) {
      last.name = name.slice(0, 200);
      const ids = [...name.matchAll(IDS)].at(-1);
      const [, vendor, device] = ids ?? [];
      if (vendor !== undefined && device !== undefined) {
        last.vendor = vendor;
        last.device = device;
      }
    }
  }
  if (devices.length === 0) return { ok: false, error: 'no PCI devices found (expected lspci -tvnn output, a sysfs listing or JSON)' };
  return { ok: true, value: new PciTopology({ source: 'lspci', devices }) };
}
