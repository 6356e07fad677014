import { IB_PORT_COUNTERS, MAX_IB_PORTS_PER_SAMPLE, type IbPort, type IbPortCounter, type IbPortCounters } from '@gpualert/schema';

/**
 * InfiniBand / RoCE port facts in the shapes the kernel and the tools print them: sysfs
 * (`4: ACTIVE`, `5: LinkUp`, `400 Gb/sec (4X NDR)`), `ibstat` and `perfquery`. Pure.
 */

/**
 * A port state as the tools print it → the schema's word; `undefined` when the text is none of
 * them (the caller says so). infiniband-diags' `ibstat.c` prints `Down`, `Initializing`, `Armed`,
 * `Active` and `???` (any state above Active, ActiveDefer included); the kernel's sysfs `state`
 * file prints `1: DOWN`, `2: INIT`, `3: ARMED`, `4: ACTIVE`, `5: ACTIVE_DEFER`, `0: NOP` and
 * `UNKNOWN`; smpquery / ibportstate print `Initialize` and `ActDefer`.
 */
const PORT_STATES: ReadonlyMap<string, IbPort['state']> = new Map([
  ['down', 'down'],
  ['initializing', 'init'],
  ['initialize', 'init'],
  ['init', 'init'],
  ['armed', 'armed'],
  ['active', 'active'],
  ['activedefer', 'active_defer'],
  ['actdefer', 'active_defer'],
  ['activedeferred', 'active_defer'],
  // Said, and saying nothing: the SMA's "no state change", the kernel's NOP.
  ['nop', 'unknown'],
  ['nostatechange', 'unknown'],
]);

/**
 * A physical state: `ibstat.c` prints `No state change`, `Sleep`, `Polling`, `Disabled`,
 * `PortConfigurationTraining`, `LinkUp`, `LinkErrorRecovery`, `PhyTest` (and `???` past 7); the
 * kernel's `phys_state` file `1: Sleep` … `7: Phy Test`.
 */
const PHYS_STATES: ReadonlyMap<string, IbPort['phys_state']> = new Map([
  ['sleep', 'sleep'],
  ['polling', 'polling'],
  ['disabled', 'disabled'],
  ['portconfigurationtraining', 'training'],
  ['training', 'training'],
  ['linkup', 'link_up'],
  ['linkerrorrecovery', 'link_error_recovery'],
  ['phytest', 'phy_test'],
  ['nostatechange', 'unknown'],
]);

/** `4: ACTIVE`, `Active`, `5: ACTIVE_DEFER`, `Link Up` → a key of the tables above. */
function stateWord(text: string): string {
  return text
    .replace(/^\d+:\s*/, '')
    .trim()
    .toLowerCase()
    .replace(/[\s_-]/g, '');
}

/** The port state a text names, or `undefined` when it names none the tools print (`???`, a typo). */
export function readPortState(text: string): IbPort['state'] | undefined {
  return PORT_STATES.get(stateWord(text));
}

/** The physical state a text names, or `undefined` when it names none the tools print. */
export function readPhysState(text: string): IbPort['phys_state'] | undefined {
  return PHYS_STATES.get(stateWord(text));
}

/** `4: ACTIVE` (sysfs) or `Active` (ibstat) → the port state; `unknown` for a text no tool prints. */
export function portState(text: string): IbPort['state'] {
  return readPortState(text) ?? 'unknown';
}

/** `5: LinkUp` (sysfs) or `LinkUp` (ibstat) → the physical state; `unknown` for a text no tool prints. */
export function physState(text: string): IbPort['phys_state'] {
  return readPhysState(text) ?? 'unknown';
}

/** `400 Gb/sec (4X NDR)` or `400` → 400. */
export function rateGbps(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)/.exec(text);
  return m ? Number(m[1]) : null;
}

/** `InfiniBand` / `Ethernet` (ibstat, sysfs `link_layer`) → the link layer; `undefined` for any other text. */
export function readLinkLayer(text: string): IbPort['link_layer'] | undefined {
  const word = text.trim().toLowerCase();
  return word === 'infiniband' ? 'infiniband' : word === 'ethernet' ? 'ethernet' : undefined;
}

export function linkLayer(text: string): IbPort['link_layer'] {
  return readLinkLayer(text) ?? 'unknown';
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
const PERFQUERY_NAMES: ReadonlyMap<string, IbPortCounter> = new Map([
  ['SymbolErrorCounter', 'symbol_error'],
  ['SymbolErrors', 'symbol_error'],
  ['LinkErrorRecoveryCounter', 'link_error_recovery'],
  ['LinkRecovers', 'link_error_recovery'],
  ['LinkDownedCounter', 'link_downed'],
  ['LinkDowned', 'link_downed'],
  ['PortRcvErrors', 'port_rcv_errors'],
  ['RcvErrors', 'port_rcv_errors'],
  ['PortRcvRemotePhysicalErrors', 'port_rcv_remote_physical_errors'],
  ['RcvRemotePhysErrors', 'port_rcv_remote_physical_errors'],
  ['PortRcvSwitchRelayErrors', 'port_rcv_switch_relay_errors'],
  ['RcvSwRelayErrors', 'port_rcv_switch_relay_errors'],
  ['PortXmitDiscards', 'port_xmit_discards'],
  ['XmtDiscards', 'port_xmit_discards'],
  ['PortXmitConstraintErrors', 'port_xmit_constraint_errors'],
  ['XmtConstraintErrors', 'port_xmit_constraint_errors'],
  ['PortRcvConstraintErrors', 'port_rcv_constraint_errors'],
  ['RcvConstraintErrors', 'port_rcv_constraint_errors'],
  ['LocalLinkIntegrityErrors', 'local_link_integrity_errors'],
  ['LinkIntegrityErrors', 'local_link_integrity_errors'],
  ['ExcessiveBufferOverrunErrors', 'excessive_buffer_overrun_errors'],
  ['ExcBufOverrunErrors', 'excessive_buffer_overrun_errors'],
  ['VL15Dropped', 'vl15_dropped'],
  ['PortXmitWait', 'port_xmit_wait'],
  ['XmtWait', 'port_xmit_wait'],
]);

/** Lines of a paste looked at: perfquery prints ~40 per port; ibstat ~16 per port. */
export const MAX_IB_PASTE_LINES = 20_000;

/** Something in a paste that was not read, with its 1-based line (0: the paste as a whole). */
export interface IbParseProblem {
  readonly line: number;
  readonly reason: string;
  readonly text: string;
}

/**
 * `perfquery [-x]` output → the port it names (`Lid 10 port 1`) and its error counters; indented
 * or not. A watched counter whose value is not a count, and a second port's block (only the first
 * is read), are problems, each said once.
 */
export function readPerfquery(text: string): { lid: number | null; port: number | null; counters: IbPortCounters; problems: IbParseProblem[] } {
  const counters: IbPortCounters = {};
  const problems: IbParseProblem[] = [];
  let lid: number | null = null;
  let port: number | null = null;
  let headers = 0;
  const lines = text.split('\n').slice(0, MAX_IB_PASTE_LINES);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    const head = /^#\s*Port (?:extended )?counters:\s*Lid\s+(\d+)\s+port\s+(\d+)/i.exec(line);
    if (head) {
      headers += 1;
      if (headers > 1) {
        problems.push({ line: i + 1, reason: "a second port's counters: only the first block is read", text: line.slice(0, 200) });
        break;
      }
      lid = Number(head[1]);
      port = Number(head[2]);
      continue;
    }
    const [, key, value] = /^([A-Za-z0-9]+):\.*(.*)$/.exec(line) ?? [];
    const name = key === undefined ? undefined : PERFQUERY_NAMES.get(key);
    if (!name || value === undefined) continue;
    const count = counterValue(value);
    if (count === undefined) problems.push({ line: i + 1, reason: `${key} is not a count`, text: line.slice(0, 200) });
    else if (counters[name] === undefined) counters[name] = count;
  }
  return { lid, port, counters, problems };
}

/** `perfquery [-x]` output → the port it names and its error counters (problems: `readPerfquery`). */
export function parsePerfquery(text: string): { lid: number | null; port: number | null; counters: IbPortCounters } {
  const { lid, port, counters } = readPerfquery(text);
  return { lid, port, counters };
}
