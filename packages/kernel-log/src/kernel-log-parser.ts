import type { XidCatalog } from '@gpualert/rules';
import type { KernelEventData } from '@gpualert/schema';
import { classify, type Classified } from './classify.ts';
import { stripPrefix, type KernelLine } from './strip-prefix.ts';

export interface KernelLogParserOptions {
  readonly catalog: XidCatalog;
  /** The host's inventory: canonical PCI address → GPU index. */
  readonly gpuIndexByPci?: ReadonlyMap<string, number>;
  /** When the host booted (ms since the epoch), to turn `[uptime]` prefixes into wall time. */
  readonly bootTimeMs?: number;
  /** The year syslog prefixes leave out. */
  readonly referenceYear?: number;
  /** Lines of the same (kind, GPU, code) closer than this collapse into one event. */
  readonly burstGapMs?: number;
  /** Details kept per event; a stack trace or RPC table longer than this is cut. */
  readonly maxDetails?: number;
}

/** One event, with where its first line was, so a collector can resume without duplicates. */
export interface ParsedKernelEvent {
  readonly ts: string;
  readonly data: KernelEventData;
  /** The position (byte offset, kmsg sequence…) the caller gave the event's first line. */
  readonly position: number;
}

export interface KernelLogStats {
  lines: number;
  events: number;
  /** Lines not about a GPU or the host's health. */
  dropped: number;
  /** Lines folded into an earlier event of the same burst, or attached to one as details. */
  collapsed: number;
}

interface Pending {
  line: KernelLine;
  text: string;
  clock: number;
  tsMs: number;
  position: number;
}

interface Burst {
  readonly key: string;
  readonly data: KernelEventData & { count: number; details?: string[] };
  readonly tsMs: number;
  readonly position: number;
  /** The last line's clock (log time where the line had one) and its wall time. */
  lastClock: number;
  lastClockWall: number;
}

/** The last instant an ISO-8601 timestamp with a four-digit year can name. */
const LATEST_ISO_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * Turns a kernel log, line by line, into `kernel.event`s: prefixes taken apart, multi-line
 * messages joined, bursts of the same fault collapsed into one event with a count and its
 * continuation lines attached. Pure apart from the clock values passed in.
 */
export class KernelLogParser {
  readonly stats: KernelLogStats = { lines: 0, events: 0, dropped: 0, collapsed: 0 };
  private readonly options: KernelLogParserOptions;
  private readonly gap: number;
  private readonly year: number;
  private readonly maxDetails: number;
  private pending: Pending | undefined;
  private readonly bursts = new Map<string, Burst>();
  /** The burst the last kept line went to: where details belong. */
  private current: Burst | undefined;

  constructor(options: KernelLogParserOptions) {
    this.options = options;
    this.gap = options.burstGapMs ?? 300;
    this.year = options.referenceYear ?? new Date().getUTCFullYear();
    this.maxDetails = options.maxDetails ?? 40;
  }

  /** Feeds one raw line that arrived at `arrivalMs`; returns the events that closed. */
  push(raw: string, arrivalMs: number, position = this.stats.lines): ParsedKernelEvent[] {
    this.stats.lines += 1;
    const line = stripPrefix(raw, this.year);
    if (line.continuation) {
      if (this.pending && !line.message.includes('=')) {
        this.pending.text += ` ${line.message.replace(/^NVRM: /, '')}`;
      } else {
        this.stats.dropped += 1; // kmsg's KEY=value dictionary lines, or a continuation of nothing
      }
      return [];
    }
    const out = this.takePending();
    const clock = line.wallMs ?? (line.uptimeS !== undefined ? line.uptimeS * 1000 : arrivalMs);
    const logged = line.wallMs ?? (line.uptimeS !== undefined && this.options.bootTimeMs !== undefined
      ? this.options.bootTimeMs + line.uptimeS * 1000
      : arrivalMs);
    // A corrupt prefix (an uptime of millennia) would date the event past what ISO-8601 can write
    // (and past what Date can hold, which throws): such a line is dated by its arrival.
    const tsMs = logged >= 0 && logged <= LATEST_ISO_MS ? logged : arrivalMs;
    this.pending = { line, text: line.message, clock, tsMs, position };
    this.closeIdle(clock, out);
    return out;
  }

  /**
   * Closes what has been quiet for the burst gap by the wall clock, so a live collector emits
   * an event shortly after its last line even when no further line arrives.
   */
  tick(nowMs: number): ParsedKernelEvent[] {
    const out: ParsedKernelEvent[] = [];
    if (this.pending && nowMs - this.pending.tsMs >= this.gap) out.push(...this.takePending());
    for (const burst of [...this.bursts.values()]) {
      if (nowMs - burst.lastClockWall >= this.gap) this.close(burst, out);
    }
    return out;
  }

  /** End of input: everything open is emitted. */
  flush(): ParsedKernelEvent[] {
    const out = this.takePending();
    for (const burst of [...this.bursts.values()]) this.close(burst, out);
    return out;
  }

  /**
   * The position of the oldest line not yet emitted in an event (or undefined when all is
   * emitted): where a restarted collector must read again from.
   */
  resumePosition(): number | undefined {
    let oldest = this.pending?.position;
    for (const burst of this.bursts.values()) {
      if (oldest === undefined || burst.position < oldest) oldest = burst.position;
    }
    return oldest;
  }

  private takePending(): ParsedKernelEvent[] {
    const pending = this.pending;
    if (!pending) return [];
    this.pending = undefined;
    const out: ParsedKernelEvent[] = [];
    this.route(classify(pending.text), pending, out);
    return out;
  }

  private route(classified: Classified, pending: Pending, out: ParsedKernelEvent[]): void {
    if (classified.type === 'drop') {
      this.stats.dropped += 1;
      this.current = undefined;
      return;
    }
    if (classified.type === 'detail') {
      if (this.current && Math.abs(pending.clock - this.current.lastClock) <= this.gap * 10) {
        this.attach(this.current, classified.text);
        this.stats.collapsed += 1;
      } else {
        this.stats.dropped += 1;
      }
      return;
    }
    const gpu = classified.pciBus === undefined ? undefined : this.options.gpuIndexByPci?.get(classified.pciBus);
    if (classified.needsGpu && gpu === undefined) {
      this.stats.dropped += 1; // a PCIe device that is not one of this host's GPUs
      this.current = undefined;
      return;
    }
    // "GPU has fallen off the bus" right after that GPU's Xid 79 is the same fault.
    if (classified.kind === 'fallen_off_bus') {
      const xid79 = this.bursts.get(`xid|${classified.pciBus ?? ''}|79|`);
      if (xid79 && Math.abs(pending.clock - xid79.lastClock) <= this.gap) {
        this.attach(xid79, classified.text);
        this.stats.collapsed += 1;
        this.current = xid79;
        return;
      }
    }
    const key = `${classified.kind}|${classified.pciBus ?? ''}|${classified.xid ?? ''}|${classified.kind === 'oom_kill' ? classified.pid ?? '' : ''}`;
    const open = this.bursts.get(key);
    if (open && Math.abs(pending.clock - open.lastClock) <= this.gap) {
      open.data.count += 1;
      open.lastClock = pending.clock;
      open.lastClockWall = pending.tsMs;
      this.stats.collapsed += 1;
      this.current = open;
      return;
    }
    if (open) this.close(open, out);
    const burst: Burst = {
      key,
      data: this.eventData(classified, gpu),
      tsMs: pending.tsMs,
      position: pending.position,
      lastClock: pending.clock,
      lastClockWall: pending.tsMs,
    };
    this.bursts.set(key, burst);
    this.current = burst;
  }

  private eventData(c: Extract<Classified, { type: 'event' }>, gpu: number | undefined): Burst['data'] {
    const data: Burst['data'] = { kind: c.kind, message: c.text, severity: c.severity ?? 'warning', count: 1 };
    // Optional fields are left out, never set to undefined: events compare and serialise cleanly.
    if (c.pciBus !== undefined) data.pci_bus = c.pciBus;
    if (gpu !== undefined) data.gpu = gpu;
    // A number no kernel writes (a corrupt line's 23-digit pid) is left out: the schema would refuse the event.
    if (c.xid !== undefined && Number.isSafeInteger(c.xid)) data.xid = c.xid;
    if (c.mig !== undefined && Number.isSafeInteger(c.mig.gpu_instance) && Number.isSafeInteger(c.mig.compute_instance ?? 0)) data.mig = c.mig;
    if (c.pid !== undefined && Number.isSafeInteger(c.pid)) data.pid = c.pid;
    if (c.process !== undefined) data.process = c.process;
    if (c.meaning !== undefined) data.meaning = c.meaning;
    if (c.action !== undefined) data.action = c.action;
    if (c.kind === 'xid' && data.xid !== undefined) {
      const entry = this.options.catalog.lookup(data.xid);
      data.meaning = entry.meaning;
      data.action = c.action ?? entry.action;
      data.severity = c.severity ?? entry.severity;
    }
    return data;
  }

  private attach(burst: Burst, text: string): void {
    const details = (burst.data.details ??= []);
    if (details.length < this.maxDetails) details.push(text);
  }

  private closeIdle(clock: number, out: ParsedKernelEvent[]): void {
    for (const burst of [...this.bursts.values()]) {
      if (Math.abs(clock - burst.lastClock) > this.gap) this.close(burst, out);
    }
  }

  private close(burst: Burst, out: ParsedKernelEvent[]): void {
    this.bursts.delete(burst.key);
    if (this.current === burst) this.current = undefined;
    this.stats.events += 1;
    out.push({ ts: new Date(burst.tsMs).toISOString(), data: burst.data, position: burst.position });
  }
}
