import { IB_PORT_COUNTERS, MAX_IB_PORTS_PER_SAMPLE, type IbPort, type IbPortCounter, type IbPortCounters } from '@gpualert/schema';

/**
 * InfiniBand / RoCE port facts in the shapes the kernel and the tools print them: sysfs
 * (`4: ACTIVE`, `5: LinkUp`, `400 Gb/sec (4X NDR)`), `ibstat` and `perfquery`. Pure.
 */

/** `4: ACTIVE` (sysfs) or `Active` (ibstat) → the port state. */
export function portState(text: string): IbPort['state'] {
  const word = text
    .replace(/^\d+:\s*/, '')
    .trim()
    .toLowerCase();
  if (word === 'active') return 'active';
  if (word === 'down') return 'down';
  if (word === 'init' || word === 'initialize') return 'init';
  if (word === 'armed') return 'armed';
  return 'unknown';
}

/** `5: LinkUp` (sysfs) or `LinkUp` (ibstat) → the physical state. */
export function physState(text: string): IbPort['phys_state'] {
  const word = text
    .replace(/^\d+:\s*/, '')
    .trim()
    .toLowerCase()
    .replace(/[\s_]/g, '');
  switch (word) {
    case 'linkup':
      return 'link_up';
    case 'polling':
      return 'polling';
    case 'disabled':
      return 'disabled';
    case 'sleep':
      return 'sleep';
    case 'portconfigurationtraining':
    case 'training':
      return 'training';
    case 'linkerrorrecovery':
      return 'link_error_recovery';
    default:
      return 'unknown';
  }
}

/** `400 Gb/sec (4X NDR)` or `400` → 400. */
export function rateGbps(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)/.exec(text);
  return m ? Number(m[1]) : null;
}

export function linkLayer(text: string): IbPort['link_layer'] {
  const word = text.trim().toLowerCase();
  return word === 'infiniband' ? 'infiniband' : word === 'ethernet' ? 'ethernet' : 'unknown';
}

const COUNTER_NAMES: ReadonlyMap<string, IbPortCounter> = new Map(IB_PORT_COUNTERS.map((name) => [name, name]));
/** sysfs spells one counter in capitals (`VL15_dropped`); every other name is the schema's. */
export function counterName(file: string): IbPortCounter | undefined {
  const name = file.toLowerCase();
  return COUNTER_NAMES.get(name);
}

/** A counter file's text → a count; anything else (a driver's `N/A`) is no reading. */
export function counterValue(text: string): number | undefined {
  const t = text.trim();
  if (!/^\d{1,20}$/.test(t)) return undefined;
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER;
}

/** perfquery's names (and its older short ones) → the schema's counter names. */
const PERFQUERY_NAMES: Record<string, IbPortCounter> = {
  SymbolErrorCounter: 'symbol_error',
  SymbolErrors: 'symbol_error',
  LinkErrorRecoveryCounter: 'link_error_recovery',
  LinkRecovers: 'link_error_recovery',
  LinkDownedCounter: 'link_downed',
  LinkDowned: 'link_downed',
  PortRcvErrors: 'port_rcv_errors',
  RcvErrors: 'port_rcv_errors',
  PortRcvRemotePhysicalErrors: 'port_rcv_remote_physical_errors',
  RcvRemotePhysErrors: 'port_rcv_remote_physical_errors',
  PortRcvSwitchRelayErrors: 'port_rcv_switch_relay_errors',
  RcvSwRelayErrors: 'port_rcv_switch_relay_errors',
  PortXmitDiscards: 'port_xmit_discards',
  XmtDiscards: 'port_xmit_discards',
  PortXmitConstraintErrors: 'port_xmit_constraint_errors',
  XmtConstraintErrors: 'port_xmit_constraint_errors',
  PortRcvConstraintErrors: 'port_rcv_constraint_errors',
  RcvConstraintErrors: 'port_rcv_constraint_errors',
  LocalLinkIntegrityErrors: 'local_link_integrity_errors',
  LinkIntegrityErrors: 'local_link_integrity_errors',
  ExcessiveBufferOverrunErrors: 'excessive_buffer_overrun_errors',
  ExcBufOverrunErrors: 'excessive_buffer_overrun_errors',
  VL15Dropped: 'vl15_dropped',
  PortXmitWait: 'port_xmit_wait',
  XmtWait: 'port_xmit_wait',
};

/** `perfquery [-x]` output → the port it names (`Lid 10 port 1`) and its error counters. */
export function parsePerfquery(text: string): { lid: number | null; port: number | null; counters: IbPortCounters } {
  const counters: IbPortCounters = {};
  let lid: number | null = null;
  let port: number | null = null;
  for (const line of text.split('\n').slice(0, 1_000)) {
    const head = /^#\s*Port (?:extended )?counters:\s*Lid\s+(\d+)\s+port\s+(\d+)/i.exec(line);
    if (head) {
      lid = Number(head[1]);
      port = Number(head[2]);
      continue;
    }
    const [, key, digits] = /^([A-Za-z0-9]+):\.*(\d+)\s*$/.exec(line.trim()) ?? [];
    const name = key === undefined ? undefined : PERFQUERY_NAMES[key];
    if (name && digits !== undefined) {
      const value = counterValue(digits);
      if (value !== undefined) counters[name] = value;
    }
  }
  return { lid, port, counters };
}

/** `ibstat` output → one port per `CA '…'` / `Port N:` block (counters are not ibstat's). */
export function parseIbstat(text: string): IbPort[] {
  const ports: IbPort[] = [];
  let device: string | undefined;
  let current: { port: number; fields: Map<string, string> } | undefined;
  const flush = () => {
    if (device && current && ports.length < MAX_IB_PORTS_PER_SAMPLE) {
      const f = current.fields;
      ports.push({
        device,
        port: current.port,
        state: portState(f.get('State') ?? ''),
        phys_state: physState(f.get('Physical state') ?? ''),
        rate_gbps: rateGbps(f.get('Rate') ?? ''),
        link_layer: linkLayer(f.get('Link layer') ?? ''),
        counters: {},
      });
    }
    current = undefined;
  };
  for (const raw of text.split('\n').slice(0, 20_000)) {
    const ca = /^CA '([^']{1,128})'/.exec(raw);
    if (ca) {
      flush();
      device = ca[1];
      continue;
    }
    const port = /^\s+Port (\d{1,3}):\s*$/.exec(raw);
    if (port) {
      flush();
      const n = Number(port[1]);
      if (n >= 1 && n <= 255) current = { port: n, fields: new Map() };
      continue;
    }
    const [, key, value] = /^\s+([A-Za-z ]+):\s*(.*)$/.exec(raw) ?? [];
    if (key !== undefined && value !== undefined && current) current.fields.set(key.trim(), value.trim());
  }
  flush();
  return ports;
}
