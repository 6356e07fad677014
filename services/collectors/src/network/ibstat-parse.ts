import { MAX_IB_PORTS_PER_SAMPLE, type IbPort } from '@gpualert/schema';
import { MAX_IB_PASTE_LINES, rateGbps, readLinkLayer, readPhysState, readPortState, type IbParseProblem } from './ib-parse.ts';

/**
 * `ibstat` as operators paste it: whole, or a piece of it (a paste that starts at `Port 1:`, one
 * that stops after `Physical state:`), indented with tabs, with spaces or not at all, the one-port
 * form `ibstat mlx5_0 1` prints (`CA: 'mlx5_0'`, unindented), and the `ibwarn:` / `ibpanic:` lines
 * the tool mixes in. The shapes are infiniband-diags' `ibstat.c` (`ca_dump`, `port_dump`). Pure.
 */

/** The name a port gets when the paste holds no `CA '…'` line before it: said as a problem, never guessed. */
export const UNNAMED_CA = 'ca-unnamed';

/** Problems said per paste; past this, one more says how many were left unsaid. */
export const MAX_IBSTAT_PROBLEMS = 20;

/** `CA 'mlx5_0'`, `Switch 'x'`, the one-port form's `CA: 'mlx5_0'` (ibstat's node_type_str). */
const HEADER = /^(?:CA|Switch|Router|iWARP RNIC|\?\?\?):? '([^']{1,128})'\s*$/;
const PORT = /^Port (\d{1,5}):\s*$/;
const FIELD = /^([A-Za-z][A-Za-z ]{0,40}):\s*(.*)$/;
/** What `ca_dump` prints about the CA itself: read past. */
const CA_FIELDS: ReadonlySet<string> = new Set([
  'CA type',
  'Switch type',
  'Router type',
  'Number of ports',
  'Firmware version',
  'Hardware version',
  'Node GUID',
  'System image GUID',
]);
/** What `port_dump` prints that the sample does not carry. */
const PORT_FIELDS_NOT_KEPT: ReadonlySet<string> = new Set(['Base lid', 'LMC', 'SM lid', 'Capability mask', 'Port GUID']);
/** A paste's furniture: blank lines, `...` elisions, shell prompts, Markdown fences. */
const NOISE = /^(?:|\.{2,}|…|```.*|[$#] .*|\[[^\]]*\][$#].*|\S+@\S+[:~][^$#]*[$#].*)$/;

interface OpenPort {
  readonly device: string;
  readonly port: number;
  readonly line: number;
  readonly fields: Map<string, { text: string; line: number }>;
}

/** Every port of an `ibstat` paste, and what it could not read (each thing once). */
export function readIbstat(text: string): { ports: IbPort[]; problems: IbParseProblem[] } {
  const ports: IbPort[] = [];
  const problems: IbParseProblem[] = [];
  const said = new Set<string>();
  let unsaid = 0;
  const say = (key: string, problem: IbParseProblem) => {
    if (said.has(key)) return;
    said.add(key);
    if (said.size > MAX_IBSTAT_PROBLEMS) unsaid += 1;
    else problems.push(problem);
  };
  const missing = new Map<string, string[]>();
  let device: string | undefined;
  let current: OpenPort | undefined;

  const close = () => {
    if (!current) return;
    const { device: dev, port, fields, line } = current;
    current = undefined;
    if (ports.length >= MAX_IB_PORTS_PER_SAMPLE) {
      say('too-many', { line, reason: `more than ${MAX_IB_PORTS_PER_SAMPLE} ports: the rest are not read`, text: `${dev} port ${port}` });
      return;
    }
    const name = `${dev}/${port}`;
    const field = (key: string) => {
      const f = fields.get(key);
      if (f === undefined) missing.set(key, [...(missing.get(key) ?? []), name]);
      return f;
    };
    const state = field('State');
    const phys = field('Physical state');
    const rate = field('Rate');
    const layer = field('Link layer');
    const read = <T>(f: { text: string; line: number } | undefined, reader: (t: string) => T | undefined, what: string, fallback: T): T => {
      if (f === undefined) return fallback;
      const value = reader(f.text);
      if (value !== undefined) return value;
      const why = f.text === '???' ? `ibstat prints ??? for a ${what} it has no name for` : `a ${what} ibstat does not print`;
      say(`${what}|${f.text}`, { line: f.line, reason: `${why}: read as unknown`, text: `${what}: ${f.text.slice(0, 80)}` });
      return fallback;
    };
    ports.push({
      device: dev,
      port,
      state: read(state, readPortState, 'state', 'unknown'),
      phys_state: read(phys, readPhysState, 'physical state', 'unknown'),
      rate_gbps: read<number | null>(rate, (t) => rateGbps(t) ?? undefined, 'rate', null),
      link_layer: read(layer, readLinkLayer, 'link layer', 'unknown'),
      counters: {},
    });
  };

  const lines = text.split('\n');
  if (lines.length > MAX_IB_PASTE_LINES) say('long', { line: MAX_IB_PASTE_LINES + 1, reason: `past ${MAX_IB_PASTE_LINES} lines: not read`, text: '' });
  lines.slice(0, MAX_IB_PASTE_LINES).forEach((raw, i) => {
    const line = raw.replace(/\r$/, '').trim();
    const at = i + 1;
    const header = HEADER.exec(line);
    if (header) {
      close();
      device = header[1];
      return;
    }
    const port = PORT.exec(line);
    if (port) {
      close();
      const n = Number(port[1]);
      if (n < 1 || n > 255) {
        say(`port|${n}`, { line: at, reason: "a port number outside 1–255 (port 0 is a switch's management port): not read", text: line });
        return;
      }
      if (device === undefined) {
        say('unnamed', { line: at, reason: `a port before any CA '…' line: its HCA is not named, reported as ${UNNAMED_CA}`, text: line });
      }
      current = { device: device ?? UNNAMED_CA, port: n, line: at, fields: new Map() };
      return;
    }
    const [, rawKey, value] = FIELD.exec(line) ?? [];
    const key = rawKey?.trim();
    if (key !== undefined && value !== undefined) {
      if (CA_FIELDS.has(key) || PORT_FIELDS_NOT_KEPT.has(key)) return;
      if (current && ['State', 'Physical state', 'Rate', 'Link layer'].includes(key)) {
        if (!current.fields.has(key)) current.fields.set(key, { text: value.trim(), line: at });
        return;
      }
      if (/^ib(?:warn|panic|error)$/.test(key)) {
        // ibpanic names what failed (a CA it could not stat): each said; ibwarn (debug chatter) once.
        say(key === 'ibwarn' ? 'tool|ibwarn' : `tool|${line}`, { line: at, reason: `ibstat's own ${key}`, text: line.slice(0, 200) });
        return;
      }
    }
    if (NOISE.test(line)) return;
    say(`line|${line}`, { line: at, reason: current ? 'not a line of an ibstat port' : 'not ibstat output', text: line.slice(0, 200) });
  });
  close();
  for (const [key, names] of missing) {
    const list = names.length > 8 ? `${names.slice(0, 8).join(', ')} and ${names.length - 8} more` : names.join(', ');
    say(`missing|${key}`, { line: 0, reason: `no "${key}:" line (a partial paste): not known`, text: list });
  }
  if (unsaid > 0) problems.push({ line: 0, reason: `and ${unsaid} more problems`, text: '' });
  return { ports, problems };
}

/** `ibstat` output → its ports (what it could not read: `readIbstat`). */
export function parseIbstat(text: string): IbPort[] {
  return readIbstat(text).ports;
}
