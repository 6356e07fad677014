import {
  canonicalPciBus,
  MAX_GPU_INDEX,
  MAX_GPUS_PER_SAMPLE,
  must,
  throttleReasonsFromMask,
  THROTTLE_REASONS,
  type GpuMetrics,
  type ThrottleReason,
} from '@gpualert/schema';
import { NUMERIC_FIELDS, THROTTLE_MASK_FIELDS } from './nvidia-smi-fields.ts';
import { plausible } from './physical-range.ts';
import { isUnavailable } from './unavailable.ts';

export interface NvidiaSmiParse {
  /** One array of GPUs per scrape: a new scrape starts where a GPU index repeats. */
  readonly samples: GpuMetrics[][];
  /** Lines that were not data rows (nvidia-smi's error messages), each text once: its first line number and how often (a `-l` loop repeats them). */
  readonly problems: { readonly line: number; readonly text: string; readonly count: number }[];
  /** What was there and could not be read, each said once (`UnreadNotes`). */
  readonly unread: readonly Unread[];
}

/** A line that says a GPU is gone; its address when it names one. */
export function lostGpuMessage(text: string): { pciBus: string | null } | undefined {
  const handle = /Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)?/.exec(text);
  if (handle) return { pciBus: handle[1] ? canonicalPciBus(handle[1].replace(/:$/, '')) : null };
  if (/fallen off the bus|GPU is lost|No devices were found/i.test(text)) return { pciBus: null };
  return undefined;
}

const UNIT = / \[[^\]]+\]$/;

/** At most this many lines are read from one input (a day of `-l 1` on 8 GPUs is ~700,000). */
export const MAX_CSV_LINES = 2_000_000;

function numeric(cell: string): number | null {
  if (isUnavailable(cell)) return null;
  const value = Number.parseFloat(cell); // "69.85 W", "0 %", "81559 MiB": the number before the unit
  return Number.isFinite(value) ? value : null;
}

function yesNo(cell: string): boolean | null {
  if (cell === 'Yes') return true;
  if (cell === 'No') return false;
  return null;
}

/**
 * A header line: every cell a field name as nvidia-smi prints them (lower case, dots and
 * underscores, a ` [unit]` after), one at least a field it documents. Values never look so:
 * numbers, `[N/A]`, `Yes`, product names and addresses all fail the first test.
 */
function headerOf(cells: readonly string[]): string[] | undefined {
  const names = cells.map((c) => c.replace(UNIT, ''));
  if (!names.every((n) => /^[a-z_][a-zA-Z0-9_.]*$/.test(n))) return undefined;
  return names.some((n) => n.includes('.') || KNOWN_PLAIN_FIELDS.has(n)) ? names.map(canonicalField) : undefined;
}

/** Field names without a dot that nvidia-smi's header prints (`--help-query-gpu`). */
const KNOWN_PLAIN_FIELDS: ReadonlySet<string> = new Set(['index', 'uuid', 'name', 'timestamp', 'serial', 'driver_version', 'count', 'pstate', 'vbios_version']);

/**
 * `--help-query-gpu`'s other names for one field ("gpu_name" or "name"): the header prints the
 * first, `--fields` may give either.
 */
const FIELD_ALIASES: ReadonlyMap<string, string> = new Map([
  ['gpu_name', 'name'],
  ['gpu_uuid', 'uuid'],
  ['gpu_bus_id', 'pci.bus_id'],
  ['gpu_serial', 'serial'],
  ['clocks.gr', 'clocks.current.graphics'],
  ['clocks.current.sm', 'clocks.sm'],
  ['clocks.current.memory', 'clocks.mem'],
  ['clocks_throttle_reasons.active', 'clocks_event_reasons.active'],
]);

function canonicalField(name: string): string {
  return FIELD_ALIASES.get(name) ?? name;
}

/** What one parse could not read, each said once with how often and where first. */
export interface Unread {
  readonly what: string;
  readonly count: number;
  readonly line: number;
}

/** Gathers `Unread` notes: one per distinct text, at most `MAX_NOTES` of them. */
export class UnreadNotes {
  static readonly MAX_NOTES = 100;
  private readonly notes = new Map<string, { count: number; line: number }>();
  private dropped = 0;

  note(what: string, line: number): void {
    const seen = this.notes.get(what);
    if (seen) seen.count += 1;
    else if (this.notes.size < UnreadNotes.MAX_NOTES) this.notes.set(what, { count: 1, line });
    else this.dropped += 1;
  }

  list(): Unread[] {
    const out = [...this.notes].map(([what, { count, line }]) => ({ what, count, line }));
    if (this.dropped > 0) out.push({ what: `${this.dropped} more notes not kept (at most ${UnreadNotes.MAX_NOTES} distinct)`, count: this.dropped, line: 0 });
    return out;
  }
}

/** How a GPU is known across the scrapes of one input: its index, else its UUID, else its bus. */
type Identity = 'index' | 'uuid' | 'pci.bus_id' | 'none';

function identityOf(header: readonly string[]): Identity {
  if (header.includes('index')) return 'index';
  if (header.includes('uuid')) return 'uuid';
  if (header.includes('pci.bus_id')) return 'pci.bus_id';
  return 'none';
}

/**
 * Parses `nvidia-smi --query-gpu=… --format=csv` output in any field list, with or without units
 * and header (headerless output needs the field list it was asked with), one run or a `-l` loop
 * (its header again starts a new scrape, as does a GPU seen again or a new `timestamp`). A GPU is
 * known by its index; without an index column by its UUID or bus id, and numbered by its row's
 * place in its scrape (nvidia-smi lists GPUs in index order; `-i` would make that wrong, which
 * the notes say). Never throws: a line that is not a row is a problem; what a row holds that
 * cannot be read (a field no metric takes, `[Unknown Error]`, `[GPU requires reset]`) is said
 * once in `unread`.
 */
export function parseNvidiaSmiCsv(text: string, fields?: readonly string[]): NvidiaSmiParse {
  let header = fields ? fields.map(canonicalField) : undefined;
  let identity: Identity = header ? identityOf(header) : 'none';
  const samples: GpuMetrics[][] = [];
  const problems: { line: number; text: string; count: number }[] = [];
  const problemAt = new Map<string, { count: number }>();
  const problem = (line: number, text: string) => {
    const seen = problemAt.get(text);
    if (seen) seen.count += 1;
    else if (problemAt.size < UnreadNotes.MAX_NOTES) {
      const entry = { line, text, count: 1 };
      problemAt.set(text, entry);
      problems.push(entry);
    } else notes.note(`lines that are not rows past the first ${UnreadNotes.MAX_NOTES} distinct`, line);
  };
  const notes = new UnreadNotes();
  let current: GpuMetrics[] = [];
  let seen = new Set<string>();
  let stamp: string | undefined;
  const endScrape = () => {
    if (current.length > 0) samples.push(current);
    current = [];
    seen = new Set();
  };
  let number = 0;
  for (const raw of text.split('\n', MAX_CSV_LINES)) {
    number += 1;
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') continue;
    const cells = line.split(', ').map((c) => c.trim());
    // A header starts with a field name; data rows start with a digit, a capital, `GPU-` or `[`: most lines skip the test.
    const named = /^[a-z_]/.test(line) ? headerOf(cells) : undefined;
    if (named) {
      endScrape();
      header = named;
      identity = identityOf(header);
      noteHeader(header, notes, number);
      continue;
    }
    // A header glued to the command line that printed it (a paste) names its fields in its cells.
    if (!header || cells.length !== header.length || namesFields(header, cells)) {
      problem(number, line);
      continue;
    }
    const read = rowToMetrics(header, identity, cells);
    if (!read) {
      problem(number, line);
      continue;
    }
    for (const what of read.unavailable) notes.note(what, number);
    const { gpu, key, timestamp } = read;
    // A GPU seen again, or a new time in a loop's timestamp column: the next scrape has begun.
    if ((key !== undefined && seen.has(key)) || (timestamp !== undefined && stamp !== undefined && timestamp !== stamp)) endScrape();
    stamp = timestamp;
    if (key !== undefined) seen.add(key);
    if (gpu.index < 0) gpu.index = current.length;
    if (current.length >= MAX_GPUS_PER_SAMPLE) {
      notes.note(`rows past ${MAX_GPUS_PER_SAMPLE} GPUs in one scrape`, number);
      continue;
    }
    current.push(gpu);
  }
  endScrape();
  if (number >= MAX_CSV_LINES) notes.note(`lines past the first ${MAX_CSV_LINES}`, number);
  return { samples, problems, unread: notes.list() };
}

function namesFields(header: readonly string[], cells: readonly string[]): boolean {
  let named = 0;
  for (const [i, cell] of cells.entries()) {
    const field = header[i] ?? '';
    if (cell === field || (cell.endsWith(']') && cell.startsWith(`${field} [`))) named += 1;
  }
  return named >= Math.min(2, header.length);
}

function noteHeader(header: readonly string[], notes: UnreadNotes, line: number): void {
  const identity = identityOf(header);
  if (identity === 'uuid' || identity === 'pci.bus_id')
    notes.note(`no index column: GPUs known by ${identity} and numbered by their row in each scrape (nvidia-smi's order, unless -i chose GPUs)`, line);
  if (identity === 'none')
    notes.note(
      'no index, uuid or pci.bus_id column: GPUs numbered by their row in each scrape, and a -l loop told apart only by its headers or timestamp column',
      line,
    );
  const ignored = header.filter((f) => !READ_FIELDS.has(f) && !MASK_FIELDS.has(f) && !/^clocks_(?:event|throttle)_reasons\./.test(f));
  if (ignored.length > 0) notes.note(`fields no metric takes: ${ignored.join(', ')}`, line);
}

const MASK_FIELDS: ReadonlySet<string> = new Set(THROTTLE_MASK_FIELDS);
const REASONS: ReadonlyMap<string, ThrottleReason> = new Map(THROTTLE_REASONS.map((r) => [r, r]));
const READ_FIELDS: ReadonlySet<string> = new Set([
  ...Object.keys(NUMERIC_FIELDS),
  'index',
  'uuid',
  'name',
  'pci.bus_id',
  'timestamp',
  'remapped_rows.pending',
  'remapped_rows.failure',
]);

interface RowRead {
  readonly gpu: GpuMetrics;
  /** The GPU's identity in this input, when a column gives one. */
  readonly key: string | undefined;
  readonly timestamp: string | undefined;
  /** `field: value` for each value the GPU could not give (`[N/A]`, `[Unknown Error]`, …). */
  readonly unavailable: string[];
}

function rowToMetrics(header: readonly string[], identity: Identity, cells: readonly string[]): RowRead | undefined {
  const gpu: GpuMetrics = emptyMetrics(-1);
  let mask: number | null = null;
  const individual = new Set<ThrottleReason>();
  let sawIndividual = false;
  let timestamp: string | undefined;
  const unavailable: string[] = [];
  for (const [c, field] of header.entries()) {
    const cell = must(cells[c], 'the caller checked the row is as long as the header');
    // The header is the input's words: only nvidia-smi's own field names map to a metric.
    const metric = Object.hasOwn(NUMERIC_FIELDS, field) ? NUMERIC_FIELDS[field] : undefined;
    if (metric) {
      if (isUnavailable(cell) && cell !== '') unavailable.push(`${field}: ${cell}`);
      if (gpu[metric] === null) gpu[metric] = plausible(metric, numeric(cell));
      continue;
    }
    switch (field) {
      case 'index': {
        const index = numeric(cell);
        if (index === null || !Number.isInteger(index) || index < 0 || index > MAX_GPU_INDEX) return undefined;
        gpu.index = index;
        break;
      }
      case 'uuid':
        gpu.uuid = isUnavailable(cell) ? null : cell;
        break;
      case 'name':
        gpu.name = isUnavailable(cell) ? null : cell;
        break;
      case 'pci.bus_id':
        gpu.pci_bus = canonicalPciBus(cell);
        break;
      case 'timestamp':
        timestamp = cell;
        break;
      case 'remapped_rows.pending':
        gpu.remap_pending = yesNo(cell);
        break;
      case 'remapped_rows.failure':
        gpu.remap_failure = yesNo(cell);
        break;
      default:
        if (MASK_FIELDS.has(field)) {
          if (/^0x[0-9a-fA-F]+$/.test(cell)) mask = Number.parseInt(cell.slice(2), 16);
        } else {
          const name = /^clocks_(?:event|throttle)_reasons\.([a-z_]+)$/.exec(field)?.[1];
          const reason = name === undefined ? undefined : REASONS.get(name);
          if (reason !== undefined && !isUnavailable(cell)) {
            sawIndividual = true;
            if (cell === 'Active') individual.add(reason);
          }
        }
    }
  }
  const key =
    identity === 'index'
      ? gpu.index >= 0
        ? `index:${gpu.index}`
        : undefined
      : identity === 'uuid'
        ? (gpu.uuid ?? undefined)
        : identity === 'pci.bus_id'
          ? (gpu.pci_bus ?? undefined)
          : undefined;
  if (identity === 'index' && gpu.index < 0) return undefined;
  // The bitmask is authoritative; the per-reason columns serve drivers that lack it.
  if (mask !== null) gpu.throttle = throttleReasonsFromMask(mask);
  else if (sawIndividual) gpu.throttle = THROTTLE_REASONS.filter((r) => individual.has(r));
  return { gpu, key, timestamp, unavailable };
}

export function emptyMetrics(index: number): GpuMetrics {
  return {
    index,
    uuid: null,
    pci_bus: null,
    name: null,
    util_pct: null,
    mem_util_pct: null,
    mem_used_mib: null,
    mem_total_mib: null,
    temp_c: null,
    mem_temp_c: null,
    power_w: null,
    power_limit_w: null,
    sm_clock_mhz: null,
    mem_clock_mhz: null,
    fan_pct: null,
    pcie_gen: null,
    pcie_gen_max: null,
    pcie_width: null,
    pcie_width_max: null,
    ecc_sbe_volatile: null,
    ecc_dbe_volatile: null,
    ecc_sbe_aggregate: null,
    ecc_dbe_aggregate: null,
    remap_pending: null,
    remap_failure: null,
    throttle: null,
    xid_last: null,
    nvlink_errors: null,
    processes: null,
  };
}

/** `--query-compute-apps=gpu_uuid,pid,…`: how many processes each GPU runs. */
export function countComputeApps(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const first = lines[0]?.split(', ') ?? [];
  const hasHeader = first.some((c) => c.startsWith('gpu_uuid') || c.startsWith('pid'));
  const uuidColumn = hasHeader ? first.findIndex((c) => c.startsWith('gpu_uuid')) : 0;
  for (const line of hasHeader ? lines.slice(1) : lines) {
    const uuid = line.split(', ')[uuidColumn]?.trim();
    if (uuid && uuid.startsWith('GPU-')) counts.set(uuid, (counts.get(uuid) ?? 0) + 1);
  }
  return counts;
}
