import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MAX_IB_PORTS_PER_SAMPLE, type IbPort, type IbPortCounters } from '@gpualert/schema';
import { counterName, counterValue, rateGbps, readLinkLayer, readPhysState, readPortState } from './ib-parse.ts';

export const DEFAULT_IB_SYSFS_ROOT = '/sys/class/infiniband';

/** HCAs read under the root: a GPU node has 8–12, a switch's management host a few; more is not a host's. */
export const MAX_IB_DEVICES = 64;
/** Ports read per HCA: 1 or 2 on ConnectX; a switch ASIC exposes more, bounded here. */
export const MAX_IB_PORTS_PER_DEVICE = 64;
/** Files read in one counters/ or hw_counters/ directory (mlx5 has ~70 hw counters). */
export const MAX_COUNTER_FILES = 256;

/** A sysfs value: small, one line; an unreadable file is no reading. */
async function readValue(path: string): Promise<string | undefined> {
  try {
    const text = await readFile(path, { encoding: 'utf8' });
    return text.slice(0, 256).trim();
  } catch {
    return undefined;
  }
}

async function list(path: string, max: number): Promise<string[]> {
  try {
    return (await readdir(path)).sort().slice(0, max);
  } catch {
    return [];
  }
}

async function readCounters(dir: string, into: IbPortCounters): Promise<void> {
  for (const file of await list(dir, MAX_COUNTER_FILES)) {
    const name = counterName(file);
    if (!name) continue;
    const value = counterValue((await readValue(join(dir, file))) ?? '');
    if (value !== undefined) into[name] = value;
  }
}

/**
 * Every InfiniBand / RoCE port under `root` (`/sys/class/infiniband`; tests pass a tree of their
 * own): state, physical state, rate, link layer, and the known error counters from counters/
 * and hw_counters/. A device or port that cannot be read is skipped, with a problem naming it; a
 * state, physical state or link layer whose text is none the kernel writes is `unknown`, with a
 * problem quoting it.
 */
export async function readInfinibandPorts(root: string = DEFAULT_IB_SYSFS_ROOT): Promise<{ ports: IbPort[]; problems: string[] }> {
  const ports: IbPort[] = [];
  const problems: string[] = [];
  for (const device of await list(root, MAX_IB_DEVICES)) {
    if (!/^[\w.-]{1,128}$/.test(device)) {
      problems.push(`${device.slice(0, 64)}: not a device name`);
      continue;
    }
    for (const portDir of await list(join(root, device, 'ports'), MAX_IB_PORTS_PER_DEVICE)) {
      if (ports.length >= MAX_IB_PORTS_PER_SAMPLE) return { ports, problems };
      const port = Number(portDir);
      if (!/^\d{1,3}$/.test(portDir) || port < 1 || port > 255) continue;
      const dir = join(root, device, 'ports', portDir);
      const state = await readValue(join(dir, 'state'));
      if (state === undefined) {
        problems.push(`${device} port ${portDir}: no state file`);
        continue;
      }
      const counters: IbPortCounters = {};
      await readCounters(join(dir, 'counters'), counters);
      await readCounters(join(dir, 'hw_counters'), counters);
      const unread = (file: string, text: string) => problems.push(`${device} port ${portDir}: ${file} "${text.slice(0, 64)}" is none the kernel writes`);
      const phys = (await readValue(join(dir, 'phys_state'))) ?? '';
      const layer = (await readValue(join(dir, 'link_layer'))) ?? '';
      const readState = readPortState(state);
      const readPhys = readPhysState(phys);
      const readLayer = readLinkLayer(layer);
      if (readState === undefined) unread('state', state);
      if (readPhys === undefined && phys !== '') unread('phys_state', phys);
      if (readLayer === undefined && layer !== '') unread('link_layer', layer);
      ports.push({
        device,
        port,
        state: readState ?? 'unknown',
        phys_state: readPhys ?? 'unknown',
        rate_gbps: rateGbps((await readValue(join(dir, 'rate'))) ?? ''),
        link_layer: readLayer ?? 'unknown',
        counters,
      });
    }
  }
  return { ports, problems };
}
