import type { XidCatalog } from '@gpualert/rules';
import { canonicalPciBus, severityRank, type KernelEventData, type KernelEventPort, type Severity } from '@gpualert/schema';
import { ghesLine } from './classify-host.ts';
import { classify, portEvent, type Classified, type ClassifiedEvent } from './classify.ts';
import { busOf, type PciTopology } from './pci-topology.ts';
import { stripPrefix, type KernelLine } from './strip-prefix.ts';

export interface KernelLogParserOptions {
  readonly catalog: XidCatalog;
  /** The host's inventory: canonical PCI address → GPU index. */
  readonly gpuIndexByPci?: ReadonlyMap<string, number>;
  /** When the host booted (ms since the epoch), to turn `[uptime]` prefixes into wall time. */
  readonly bootTimeMs?: number;
  /** The year syslog prefixes leave out; by default each line's arrival year. */
  readonly referenceYear?: number;
  /** Lines of the same (kind, GPU, code) closer than this collapse into one event. */
  readonly burstGapMs?: number;
  /** Details kept per event; a stack trace or RPC table longer than this is cut. */
  readonly maxDetails?: number;
  /** The host's PCI tree: a switch or root port's error names the GPUs and NVSwitches below it. */
  readonly topology?: PciTopology;
  /** One event per (kind, GPU or port, code) at most this often while its lines keep coming; the rest are counted into the next. */
  readonly episodeFlushMs?: number;
  /** An episode ends after this long without a line of it: the next one is a new fault, told at once. */
  readonly episodeQuietMs?: number;
  /** Episodes remembered at once; past it the oldest is told and forgotten. */
  readonly maxEpisodes?: number;
  /** Events of one episode told one by one, as bursts, before its lines are folded into counts. */
  readonly episodeEventsBeforeFolding?: number;
}

/** A fault's first ten bursts are told as they come (a GSP incident's three Xid 119s, each with its RPC table); a flood's rest is counted. */
export const EPISODE_EVENTS_BEFORE_FOLDING = 10;

/** At most one event a minute per fault while a flood lasts. */
export const EPISODE_FLUSH_MS = 60_000;
/** Ten minutes without a line ends an episode. */
export const EPISODE_QUIET_MS = 10 * 60_000;
/** 256 GPUs × 16 codes: more faults than a host shows at once; a made-up stream of codes must not grow it. */
export const MAX_EPISODES = 4_096;

/** One event, with where its first line was, so a collector can resume without duplicates. */
export interface ParsedKernelEvent {
  readonly ts: string;
  readonly data: KernelEventData;
  /** The position (byte offset, kmsg sequence…) the caller gave the event's first line. */
  readonly position: number;
  /**
   * The first line's own stamp when it was later than the line's arrival (beyond `FUTURE_SLACK_MS`):
   * `ts` is then the arrival, and this (ISO-8601, or ms since the epoch past what ISO can write) is what the line claimed.
   */
  readonly claimedTs?: string;
}

export interface KernelLogStats {
  lines: number;
  events: number;
  /** Lines not about a GPU or the host's health. */
  dropped: number;
  /** Lines folded into an earlier event of the same burst, or attached to one as details. */
  collapsed: number;
  /** Lines whose own stamp was after their arrival (beyond `FUTURE_SLACK_MS`): dated by their arrival instead. */
  futureDated: number;
  /** Lines folded into a running episode (a flood of one fault) and told by count. */
  folded: number;
}

/**
 * A fault that keeps printing (800,000 lines of one Xid): after its first event, its lines are
 * counted, and told at most once per `episodeFlushMs` as one event with the count, so what the
 * engine and the notifier get stays flat however long the flood.
 */
interface Episode {
  readonly key: string;
  /** The first event's data, without its details: what each later event of the episode repeats. */
  readonly template: KernelEventData;
  readonly firstMs: number;
  /** Lines of the episode so far, told or not. */
  lines: number;
  /** Events told so far: folding starts after `episodeEventsBeforeFolding`. */
  events: number;
  lastClock: number;
  lastWall: number;
  /** The last line of the last event told: the next one is due `episodeFlushMs` after it. */
  toldClock: number;
  toldWall: number;
  /** Lines counted since the last event told, the first one's time and position. */
  pending: number;
  pendingWall: number;
  pendingPosition: number;
  /** The last line folded by the fast path, its arrival, not yet dated (dated at the next sweep or when told). */
  undated?: { raw: string; arrivalMs: number } | undefined;
}

/**
 * The flood's fast path: a line whose prefix has the shape of the last folded line's (the same
 * characters, digits aside) and whose message is one already folded is counted without taking its
 * prefix apart or classifying it. Only for prefixes that date a line by themselves (a wall time or
 * an uptime), never deltas.
 */
interface FastPath {
  /** The prefix of the last line dated, and its clock: a line that differs from it only in a fraction of a second is not dated again. */
  datedPrefix: string;
  datedClock: number;
  /** Message → its episode; at most `FAST_MESSAGES`. */
  readonly messages: Map<string, Episode>;
  /** Lines folded since the last sweep: every `FAST_SWEEP_LINES`, one is dated and what is due is told. */
  sinceSweep: number;
}
const FAST_MESSAGES = 256;
const FAST_SWEEP_LINES = 256;

interface Pending {
  /** The raw line, as pushed: a folded line's prefix teaches the flood's fast path. */
  raw: string;
  line: KernelLine;
  text: string;
  clock: number;
  tsMs: number;
  position: number;
  /** The line's own stamp, when it was in the future and `tsMs` is its arrival instead. */
  claimedMs?: number | undefined;
}

interface Burst {
  readonly key: string;
  /** Mutable: a firmware record's lines can tell what its header did not (a memory error, a PCIe one). */
  family: string | undefined;
  /** A firmware (APEI/GHES) record: what its lines said so far. */
  ghes?: { severity?: Severity; section?: 'memory' | 'pcie' | 'processor'; memoryOnly?: boolean };
  /** The device minor number an address-less line named. */
  minor: number | undefined;
  readonly data: KernelEventData & { count: number; details?: string[] };
  readonly tsMs: number;
  readonly position: number;
  readonly claimedMs: number | undefined;
  /** The first line's clock: a burst that never pauses is told after `episodeFlushMs`. */
  readonly firstClock: number;
  /** It never paused for `episodeFlushMs`: a flood, whose next lines are folded at once. */
  flooding?: boolean;
  /** The last line's clock (log time where the line had one) and its wall time. */
  lastClock: number;
  lastClockWall: number;
}

/** The last instant an ISO-8601 timestamp with a four-digit year can name. */
const LATEST_ISO_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const HOST_GAP_MS = 1_000;
const GHES_HEADER = /^\{\d+\}\[Hardware Error\]: Hardware error from APEI/;
/** A container runtime's partial lines joined into one, and a message's continuation lines, are cut at this length. */
const MAX_PARTIAL = 65_536;
/**
 * Bursts open at once. Past it the oldest is told at once: lines that share one clock (a log
 * replayed, or a clock standing still) each open a burst of their own when their texts, GPUs or
 * killed pids differ, and nothing else closes them until the clock moves; each line also looks
 * at every open burst, so without a bound both memory and time per line grew with them.
 */
export const MAX_OPEN_BURSTS = 1_024;
/** A syslog date this far past the arrival is last year's (the prefix has no year). */
const YEAR_SLACK_MS = 2 * 86_400_000;
/**
 * A line's own stamp later than its arrival by more than this (a host clock set years ahead, a
 * corrupt or hostile stamp: 2099, 9999) is not believed: the line is dated by its arrival, and
 * its event keeps what it claimed (`claimedTs`, and a first detail saying so). Five minutes
 * covers clocks that drift apart between hosts and the collector; an old log keeps its dates.
 */
export const FUTURE_SLACK_MS = 5 * 60_000;

/** The time of the line just read (and the previous line's, for lines that give only a delta). */
interface LineTime {
  clock: number;
  tsMs: number;
  logged: boolean;
  timed: boolean;
  claimedMs: number | undefined;
}

/**
 * Turns a kernel log, line by line, into `kernel.event`s: prefixes taken apart, multi-line
 * messages joined, bursts of the same fault collapsed into one event with a count and its
 * continuation lines attached. Pure apart from the clock values passed in.
 */
export class KernelLogParser {
  readonly stats: KernelLogStats = { lines: 0, events: 0, dropped: 0, collapsed: 0, futureDated: 0, folded: 0 };
  private readonly options: KernelLogParserOptions;
  private readonly gap: number;
  /** The arrival year last asked for, and the instants it spans: one Date a year, not one a line. */
  private year = { year: 0, from: 0, until: -1 };
  private readonly maxDetails: number;
  private pending: Pending | undefined;
  private readonly bursts = new Map<string, Burst>();
  /** The burst the last kept line went to: where details belong. */
  private current: Burst | undefined;
  /** A container runtime's partial line waiting for the rest. */
  private partial: { line: KernelLine; text: string; position: number; arrivalMs: number } | undefined;
  /** The previous line's clock and time, for lines that give only the delta since it. */
  private previous: LineTime | undefined;
  /** Faults told once and still printing, in the order they began (the oldest is forgotten first). */
  private readonly episodes = new Map<string, Episode>();
  /** Episodes with lines counted and not yet told. */
  private readonly untold = new Set<Episode>();
  private readonly flushMs: number;
  private readonly quietMs: number;
  private readonly maxEpisodes: number;
  private readonly eventsBeforeFolding: number;
  /** Untold counts are looked at every 64 lines or every second of log time, not at every line. */
  private sweep = { clock: 0, lines: 0 };
  private fast: FastPath | undefined;
  /** The line pushed last: dating it again moves `previous` nowhere it was not. */
  private lastRaw = '';

  constructor(options: KernelLogParserOptions) {
    this.options = options;
    this.gap = options.burstGapMs ?? 300;
    this.maxDetails = options.maxDetails ?? 40;
    this.flushMs = options.episodeFlushMs ?? EPISODE_FLUSH_MS;
    this.quietMs = Math.max(options.episodeQuietMs ?? EPISODE_QUIET_MS, this.flushMs);
    this.maxEpisodes = options.maxEpisodes ?? MAX_EPISODES;
    this.eventsBeforeFolding = options.episodeEventsBeforeFolding ?? EPISODE_EVENTS_BEFORE_FOLDING;
  }

  /**
   * The UTC year a line arrived in: what a syslog date without a year is read in (a collector that
   * runs through New Year reads January's lines in the new year, not the year it started in).
   */
  private yearOf(arrivalMs: number): number {
    if (arrivalMs < this.year.from || arrivalMs > this.year.until) {
      const year = new Date(arrivalMs).getUTCFullYear();
      this.year = { year, from: Date.UTC(year, 0, 1), until: Date.UTC(year + 1, 0, 1) - 1 };
    }
    return this.year.year;
  }

  /** Feeds one raw line that arrived at `arrivalMs`; returns the events that closed. */
  push(raw: string, arrivalMs: number, position = this.stats.lines): ParsedKernelEvent[] {
    this.stats.lines += 1;
    this.lastRaw = raw;
    if (this.fast !== undefined && this.partial === undefined) {
      const folded = this.foldFast(this.fast, raw, arrivalMs, position);
      if (folded !== undefined) return folded;
    }
    return this.slowPush(raw, arrivalMs, position);
  }

  /** A line taken apart and classified: every line that is not a known flood line. */
  private slowPush(raw: string, arrivalMs: number, position: number): ParsedKernelEvent[] {
    let line = stripPrefix(raw, this.options.referenceYear ?? this.yearOf(arrivalMs));
    if (line.partial) {
      if (this.partial) {
        if (this.partial.text.length < MAX_PARTIAL) this.partial.text = (this.partial.text + line.message).slice(0, MAX_PARTIAL);
      } else {
        this.partial = { line, text: line.message, position, arrivalMs };
      }
      this.stats.collapsed += 1;
      return [];
    }
    if (this.partial) {
      // The first fragment's prefix dates the line and marks where it began.
      const { line: head, text } = this.partial;
      line = { ...head, message: (text + line.message).slice(0, MAX_PARTIAL), partial: false };
      position = this.partial.position;
      this.partial = undefined;
    }
    if (line.continuation) {
      if (this.pending && !line.message.includes('=')) {
        // Bounded like a partial line: an endless run of continuation lines is cut, never held whole.
        if (this.pending.text.length < MAX_PARTIAL) this.pending.text = `${this.pending.text} ${line.message.replace(/^NVRM: /, '')}`.slice(0, MAX_PARTIAL);
      } else {
        this.stats.dropped += 1; // kmsg's KEY=value dictionary lines, or a continuation of nothing
      }
      return [];
    }
    const out = this.takePending();
    const { clock, tsMs, claimedMs } = this.timeOf(line, arrivalMs);
    this.pending = { raw, line, text: line.message, clock, tsMs, position, claimedMs };
    this.closeIdle(clock, out);
    return out;
  }

  /** The fast path (`FastPath`): the events closed, or undefined when the line is not a known flood line. */
  private foldFast(fast: FastPath, raw: string, arrivalMs: number, position: number): ParsedKernelEvent[] | undefined {
    // One pass: the prefix has the shape of the last dated one (digits aside), and where it first differs from it.
    const dated = fast.datedPrefix;
    const length = dated.length;
    if (raw.length <= length) return undefined;
    let differs = -1;
    for (let i = 0; i < length; i += 1) {
      const a = raw.charCodeAt(i);
      const b = dated.charCodeAt(i);
      if (a === b) continue;
      if (!isDigit(a) || !isDigit(b)) return undefined;
      if (differs < 0) differs = i;
    }
    const episode = fast.messages.get(raw.slice(length));
    if (episode === undefined || this.episodes.get(episode.key) !== episode || this.bursts.has(episode.key)) return undefined;
    const out = this.takePending();
    let time: { clock: number; tsMs: number } | undefined;
    if (differs >= 0 && !withinSecond(dated, differs)) {
      // A new second (or more): dated, so a quiet gap or a due count is seen as the slow path sees it.
      time = this.dateOf(raw, arrivalMs);
      fast.datedPrefix = raw.slice(0, length);
      fast.datedClock = time.clock;
      this.dateUndated(episode);
      if (Math.abs(time.clock - episode.lastClock) > this.quietMs) {
        this.tellEpisode(episode, out);
        this.episodes.delete(episode.key);
        out.push(...this.slowPush(raw, arrivalMs, position));
        return out;
      }
      if (Math.abs(time.clock - episode.toldClock) >= this.flushMs) this.tellEpisode(episode, out);
    }
    if (episode.pending === 0) {
      // The first line counted since the episode was last told dates that event.
      episode.pendingWall = (time ?? this.dateOf(raw, arrivalMs)).tsMs;
      episode.pendingPosition = position;
      this.untold.add(episode);
    }
    episode.pending += 1;
    episode.lines += 1;
    if (time) {
      episode.lastClock = time.clock;
      episode.lastWall = Math.max(episode.lastWall, time.tsMs);
      episode.undated = undefined;
    } else {
      episode.undated = { raw, arrivalMs };
    }
    this.current = undefined;
    this.stats.folded += 1;
    this.stats.collapsed += 1;
    fast.sinceSweep += 1;
    if (fast.sinceSweep >= FAST_SWEEP_LINES) {
      fast.sinceSweep = 0;
      this.closeIdle(fast.datedClock, out);
    }
    return out;
  }

  /** A line's time, its prefix taken apart as the slow path does; `previous` moves along only for the line just read. */
  private dateOf(raw: string, arrivalMs: number, earlier = false): { clock: number; tsMs: number } {
    const saved = earlier && this.previous ? { ...this.previous } : undefined;
    const { clock, tsMs } = this.timeOf(stripPrefix(raw, this.options.referenceYear ?? this.yearOf(arrivalMs)), arrivalMs);
    if (saved && this.previous) Object.assign(this.previous, saved);
    return { clock, tsMs };
  }

  /** The episode's last fast-folded line dated: its last clock and wall time brought up to it. */
  private dateUndated(episode: Episode): { clock: number } {
    const undated = episode.undated;
    if (undated === undefined) return { clock: episode.lastClock };
    episode.undated = undefined;
    const time = this.dateOf(undated.raw, undated.arrivalMs, undated.raw !== this.lastRaw);
    episode.lastClock = time.clock;
    episode.lastWall = Math.max(episode.lastWall, time.tsMs);
    return { clock: time.clock };
  }

  /** A line just folded by the slow path teaches the fast path its prefix and message. */
  private learnFast(episode: Episode, pending: Pending): void {
    const { raw, line, text } = pending;
    if (text !== line.message || line.deltaS !== undefined || pending.claimedMs !== undefined) return;
    if (line.wallMs === undefined && line.uptimeS === undefined) return;
    if (!raw.endsWith(text) || raw.length === text.length) return;
    const prefix = raw.slice(0, raw.length - text.length);
    if (this.fast === undefined || this.fast.datedPrefix.length !== prefix.length) {
      this.fast = { datedPrefix: prefix, datedClock: pending.clock, messages: new Map(), sinceSweep: 0 };
    } else {
      this.fast.datedPrefix = prefix;
      this.fast.datedClock = pending.clock;
    }
    if (this.fast.messages.size >= FAST_MESSAGES) this.fast.messages.clear();
    this.fast.messages.set(text, episode);
  }

  /**
   * A line's own time where it has one; an uptime through the boot time; a delta from the line
   * before. Nothing derived is dated after the line arrived: an uptime beyond this boot's (a log
   * from an earlier boot) or a delta chain with no anchor is dated by its arrival.
   */
  private timeOf(line: KernelLine, arrivalMs: number): LineTime {
    let clock: number;
    let logged: number;
    let fromLog = true;
    let claimedMs: number | undefined;
    if (line.wallMs !== undefined) {
      logged = line.wallMs;
      // A year-less date that lands in the future is last year's (December's log read in January).
      if (line.yearGuessed && logged > arrivalMs + YEAR_SLACK_MS) {
        const date = new Date(logged);
        date.setUTCFullYear(date.getUTCFullYear() - 1);
        logged = date.getTime();
      }
      if (logged > arrivalMs + FUTURE_SLACK_MS) {
        claimedMs = logged;
        logged = arrivalMs;
        fromLog = false;
        this.stats.futureDated += 1;
      }
      // syslog's stamp has whole seconds; the kernel's uptime after it tells lines apart within one
      clock = line.uptimeS !== undefined ? line.uptimeS * 1000 : logged;
    } else if (line.uptimeS !== undefined) {
      clock = line.uptimeS * 1000;
      if (this.options.bootTimeMs !== undefined && this.options.bootTimeMs + clock <= arrivalMs) {
        logged = this.options.bootTimeMs + clock;
      } else {
        logged = arrivalMs;
        fromLog = false;
      }
    } else if (line.deltaS !== undefined && this.previous) {
      clock = this.previous.clock + line.deltaS * 1000;
      logged = this.previous.logged ? Math.min(this.previous.tsMs + line.deltaS * 1000, arrivalMs) : arrivalMs;
      fromLog = this.previous.logged;
    } else if (line.deltaS === undefined && this.previous?.timed) {
      // A line without a time inside a log that has them (a wall broadcast's header, a pasted
      // comment) happened where the log was: it must not look like a jump in time.
      clock = this.previous.clock;
      logged = this.previous.tsMs;
      fromLog = this.previous.logged;
    } else {
      clock = line.deltaS !== undefined ? arrivalMs + line.deltaS * 1000 : arrivalMs;
      logged = arrivalMs;
      fromLog = false;
    }
    // A corrupt prefix (an uptime of millennia) would date the event past what ISO-8601 can write
    // (and past what Date can hold, which throws): such a line is dated by its arrival.
    const tsMs = logged >= 0 && logged <= LATEST_ISO_MS ? logged : arrivalMs;
    const timed =
      line.wallMs !== undefined || line.uptimeS !== undefined || (line.deltaS !== undefined && this.previous !== undefined) || (this.previous?.timed ?? false);
    // One object reused: this runs for every line.
    const previous = (this.previous ??= { clock, tsMs, logged: false, timed: false, claimedMs: undefined });
    previous.clock = clock;
    previous.tsMs = tsMs;
    previous.logged = fromLog && tsMs === logged;
    previous.timed = timed;
    previous.claimedMs = claimedMs;
    return previous;
  }

  /**
   * Closes what has been quiet for the burst gap by the wall clock, so a live collector emits
   * an event shortly after its last line even when no further line arrives.
   */
  tick(nowMs: number): ParsedKernelEvent[] {
    const out: ParsedKernelEvent[] = [];
    if (this.pending && nowMs - this.pending.tsMs >= this.gap) out.push(...this.takePending());
    for (const burst of [...this.bursts.values()]) {
      if (nowMs - burst.lastClockWall >= this.gapOf(burst)) this.close(burst, out);
    }
    for (const episode of [...this.untold]) if (nowMs - episode.toldWall >= this.flushMs) this.tellEpisode(episode, out);
    return out;
  }

  /** End of input: everything open is emitted. */
  flush(): ParsedKernelEvent[] {
    const out: ParsedKernelEvent[] = [];
    if (this.partial) {
      // A partial line with no end: what came is the line.
      const { line, text, position, arrivalMs } = this.partial;
      this.partial = undefined;
      out.push(...this.takePending());
      const { clock, tsMs, claimedMs } = this.timeOf(line, arrivalMs);
      this.pending = { raw: text, line: { ...line, message: text, partial: false }, text, position, clock, tsMs, claimedMs };
    }
    out.push(...this.takePending());
    for (const burst of [...this.bursts.values()]) this.close(burst, out);
    for (const episode of [...this.untold]) this.tellEpisode(episode, out);
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
    for (const episode of this.untold) {
      if (oldest === undefined || episode.pendingPosition < oldest) oldest = episode.pendingPosition;
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

  private route(given: Classified, pending: Pending, out: ParsedKernelEvent[]): void {
    if (given.type === 'drop') {
      this.stats.dropped += 1;
      this.current = undefined;
      return;
    }
    if (given.type === 'detail') {
      if (this.current && Math.abs(pending.clock - this.current.lastClock) <= this.gap * 10) {
        this.attach(this.current, given.text);
        this.stats.collapsed += 1;
      } else {
        this.stats.dropped += 1;
      }
      return;
    }
    let classified: ClassifiedEvent = given;
    // An uncorrected error on a device the topology knows as a bridge is the port's.
    if (classified.needsGpu && classified.address !== undefined && classified.severity !== 'warning' && this.options.topology?.isBridge(classified.address)) {
      classified = portEvent(classified.text, classified.address, classified.severity ?? 'error', 'uncorrected');
    }
    // A port's corrected errors matter only above a GPU: with the topology known, a port with none below is noise.
    if (classified.port !== undefined && classified.severity === 'warning' && this.options.topology?.has(classified.port)) {
      const inventory = this.options.gpuIndexByPci;
      const below = this.options.topology.below(classified.port, inventory ? (d) => d.endsWith('.0') && inventory.has(busOf(d)) : undefined);
      if (below.gpus.length === 0 && below.nvswitches.length === 0) {
        this.stats.dropped += 1;
        this.current = undefined;
        return;
      }
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
    // A firmware record (APEI/GHES) printed inside a machine check's report is that report's detail.
    if (classified.family?.startsWith('ghes:') && GHES_HEADER.test(classified.text)) {
      const host = this.current;
      if (
        host?.data.kind === 'host' &&
        ['memory_ue', 'memory_ce', 'mce'].includes(host.family ?? '') &&
        Math.abs(pending.clock - host.lastClock) <= this.gapOf(host)
      ) {
        host.ghes ??= { memoryOnly: true };
        this.attach(host, classified.text);
        host.lastClock = pending.clock;
        host.lastClockWall = pending.tsMs;
        this.stats.collapsed += 1;
        return;
      }
    }
    // The next line of the same fault (the same family, the same GPU or none named) is its detail
    // (or, for a new occurrence such as another link's SXid, its count), not a second event.
    const current = this.sameFault(classified, pending.clock);
    if (current !== undefined) {
      current.minor ??= classified.minor;
      if (current.data.pci_bus === undefined && classified.pciBus !== undefined) {
        current.data.pci_bus = classified.pciBus;
        if (gpu !== undefined) current.data.gpu = gpu;
      }
      // A later line can say more than the first (DPC's containment, then the port's Fatal error).
      if (severityRank(classified.severity ?? 'warning') > severityRank(current.data.severity)) current.data.severity = classified.severity ?? 'warning';
      if (classified.counts) current.data.count += 1;
      else this.attach(current, classified.text);
      current.lastClock = pending.clock;
      current.lastClockWall = pending.tsMs;
      this.current = current;
      this.stats.collapsed += 1;
      return;
    }
    // Per-GPU folding only: a line without an address folds only with the same line (other_gpu) or
    // the same fault (host), never with another GPU's.
    const byText = classified.pciBus === undefined && classified.port === undefined && classified.kind === 'other_gpu';
    const who =
      classified.pciBus ?? classified.port ?? (classified.kind === 'host' ? (classified.family ?? classified.hostFault ?? '') : byText ? classified.text : '');
    const key = `${classified.kind}|${who}|${classified.xid ?? ''}|${classified.kind === 'oom_kill' ? (classified.pid ?? '') : ''}`;
    const open = this.bursts.get(key);
    // Without an address only a repeat right after itself is the same GPU's: another event between means another try.
    if (
      open &&
      Math.abs(pending.clock - open.lastClock) <= this.gapOf(open) &&
      (!byText || open === this.current) &&
      Math.abs(pending.clock - open.firstClock) < this.flushMs
    ) {
      open.data.count += 1;
      if (classified.kind !== 'xid' && severityRank(classified.severity ?? 'warning') > severityRank(open.data.severity))
        open.data.severity = classified.severity ?? 'warning';
      open.lastClock = pending.clock;
      open.lastClockWall = pending.tsMs;
      this.stats.collapsed += 1;
      this.current = open;
      return;
    }
    if (open) {
      if (Math.abs(pending.clock - open.lastClock) <= this.gapOf(open)) open.flooding = true;
      this.close(open, out);
    }
    if (this.fold(key, pending, out)) return;
    const burst: Burst = {
      key,
      family: classified.family,
      ...(classified.family?.startsWith('ghes:') ? { ghes: {} } : {}),
      minor: classified.minor,
      data: this.eventData(classified, gpu),
      tsMs: pending.tsMs,
      position: pending.position,
      claimedMs: pending.claimedMs,
      firstClock: pending.clock,
      lastClock: pending.clock,
      lastClockWall: pending.tsMs,
    };
    if (pending.claimedMs !== undefined)
      this.attach(burst, `gpualert: the line's own time ${claimedText(pending.claimedMs)} is after it arrived; dated by its arrival`);
    // The oldest open burst (a Map keeps the order bursts were opened in) is told to make room.
    if (this.bursts.size >= MAX_OPEN_BURSTS) {
      const oldest = this.bursts.values().next().value;
      if (oldest) this.close(oldest, out);
    }
    this.bursts.set(key, burst);
    this.current = burst;
  }

  /** The open event this line belongs to: the same family, the same GPU or none named, within the gap; the current one first. */
  private sameFault(c: ClassifiedEvent, clock: number): Burst | undefined {
    if (c.family === undefined) return undefined;
    const fits = (b: Burst | undefined): b is Burst =>
      b !== undefined &&
      (b.family === c.family || (b.ghes !== undefined && c.family?.startsWith('ghes:') === true)) &&
      Math.abs(clock - b.lastClock) <= this.gapOf(b) &&
      (b.data.pci_bus === undefined || c.pciBus === undefined || b.data.pci_bus === c.pciBus) &&
      (b.minor === undefined || c.minor === undefined || b.minor === c.minor);
    if (fits(this.current)) return this.current;
    let found: Burst | undefined;
    for (const burst of this.bursts.values()) if (fits(burst) && (!found || burst.lastClock >= found.lastClock)) found = burst;
    return found;
  }

  private eventData(c: ClassifiedEvent, gpu: number | undefined): Burst['data'] {
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
    if (c.hostFault !== undefined) data.host_fault = c.hostFault;
    if (c.port !== undefined) data.port = this.portData(c.port, data);
    if (c.kind === 'xid' && data.xid !== undefined) {
      const entry = this.options.catalog.lookup(data.xid);
      data.meaning = entry.meaning;
      data.action = c.action ?? entry.action;
      data.severity = c.severity ?? entry.severity;
    }
    return data;
  }

  /** The port and, where the topology is known, the GPUs and NVSwitches below it (named in the meaning too). */
  private portData(address: string, data: Burst['data']): KernelEventPort {
    const port: KernelEventPort = { address };
    const topology = this.options.topology;
    if (!topology?.has(address)) return port;
    const inventory = this.options.gpuIndexByPci;
    // The inventory's addresses have no function: its GPU is function 0 (function 1 is the GPU's audio).
    const below = topology.below(address, inventory ? (device) => device.endsWith('.0') && inventory.has(busOf(device)) : undefined);
    const gpus = [...new Set(below.gpus.map(busOf))];
    port.gpus = gpus;
    const indexes = gpus.map((g) => this.options.gpuIndexByPci?.get(g)).filter((i): i is number => i !== undefined);
    if (indexes.length > 0) port.gpu_indexes = indexes;
    if (below.nvswitches.length > 0) port.nvswitches = below.nvswitches.map(busOf);
    const names = gpus.map((g, i) => (indexes.length === gpus.length ? `GPU ${indexes[i]} (${g})` : g));
    data.meaning = `${data.meaning ?? 'PCIe error on a port'}; below it: ${names.length > 0 ? names.join(', ') : 'no GPU'}${below.nvswitches.length > 0 ? `, ${below.nvswitches.length} NVSwitch(es)` : ''}`;
    return port;
  }

  private attach(burst: Burst, text: string): void {
    const details = (burst.data.details ??= []);
    if (details.length < this.maxDetails) details.push(text);
    if (burst.ghes) this.refineGhes(burst, text);
  }

  /** A GHES record's severity and section decide what its event is: a memory UE/CE, a PCIe error, a machine check. */
  private refineGhes(burst: Burst, text: string): void {
    const said = ghesLine(text);
    const ghes = burst.ghes;
    if (!said || !ghes) return;
    if (said.severity) ghes.severity = said.severity;
    if (said.section) ghes.section = said.section;
    const data = burst.data;
    if (ghes.severity && severityRank(ghes.severity) > severityRank(data.severity)) data.severity = ghes.severity;
    if (ghes.section === 'memory') {
      const ue = severityRank(data.severity) >= severityRank('error');
      data.host_fault = ue ? 'memory_ue' : 'memory_ce';
      data.meaning = ue ? 'the firmware reported an uncorrectable host memory error (APEI)' : 'the firmware reported a corrected host memory error (APEI)';
      if (ue) data.severity = 'critical';
      burst.family = data.host_fault;
    } else if (ghes.section === 'pcie' && !ghes.memoryOnly) {
      data.kind = 'pcie_aer';
      delete data.host_fault;
      data.meaning = 'the firmware reported a PCIe error (APEI)';
      if (said.device) {
        const pci = canonicalPciBus(said.device);
        if (pci) data.pci_bus = pci;
        const gpu = pci ? this.options.gpuIndexByPci?.get(pci) : undefined;
        if (gpu !== undefined) data.gpu = gpu;
      }
    }
  }

  /** A host fault's burst (a DIMM's corrected errors, a flood of lockups) folds within a second. */
  private gapOf(burst: Burst): number {
    return burst.data.kind === 'host' ? Math.max(this.gap, HOST_GAP_MS) : this.gap;
  }

  private closeIdle(clock: number, out: ParsedKernelEvent[]): void {
    for (const burst of [...this.bursts.values()]) {
      if (Math.abs(clock - burst.lastClock) > this.gapOf(burst)) this.close(burst, out);
    }
    this.sweep.lines += 1;
    if (this.untold.size > 0 && (this.sweep.lines >= 64 || Math.abs(clock - this.sweep.clock) >= 1_000)) {
      this.sweep = { clock, lines: 0 };
      for (const episode of [...this.untold]) if (Math.abs(clock - episode.toldClock) >= this.flushMs) this.tellEpisode(episode, out);
    }
  }

  /**
   * A line of a fault told less than `episodeFlushMs` ago is counted into its episode, not made an
   * event; its details are not kept (the first event has them). True when folded.
   */
  private fold(key: string, pending: Pending, out: ParsedKernelEvent[]): boolean {
    const episode = this.episodes.get(key);
    if (!episode) return false;
    this.dateUndated(episode);
    if (Math.abs(pending.clock - episode.lastClock) > this.quietMs) {
      // Quiet long enough: over. What it still counted is told before the new fault.
      this.tellEpisode(episode, out);
      this.episodes.delete(key);
      return false;
    }
    if (episode.events < this.eventsBeforeFolding) return false; // not a flood yet: a burst as any other
    // Due: the count so far is told, and this line starts the next count.
    if (Math.abs(pending.clock - episode.toldClock) >= this.flushMs) this.tellEpisode(episode, out);
    if (episode.pending === 0) {
      episode.pendingWall = pending.tsMs;
      episode.pendingPosition = pending.position;
      this.untold.add(episode);
    }
    episode.pending += 1;
    episode.lines += 1;
    episode.undated = undefined;
    episode.lastClock = pending.clock;
    episode.lastWall = Math.max(episode.lastWall, pending.tsMs);
    this.stats.folded += 1;
    this.stats.collapsed += 1;
    this.current = undefined; // a folded line's details have nowhere to go
    this.learnFast(episode, pending);
    return true;
  }

  private tellEpisode(episode: Episode, out: ParsedKernelEvent[]): void {
    if (episode.pending === 0) return;
    this.dateUndated(episode);
    this.stats.events += 1;
    out.push({
      ts: new Date(episode.pendingWall).toISOString(),
      data: { ...episode.template, count: episode.pending, episode: this.episodeOf(episode) },
      position: episode.pendingPosition,
    });
    episode.pending = 0;
    episode.events += 1;
    episode.toldClock = episode.lastClock;
    episode.toldWall = episode.lastWall;
    this.untold.delete(episode);
  }

  private episodeOf(episode: Episode): NonNullable<KernelEventData['episode']> {
    return { first_ts: new Date(episode.firstMs).toISOString(), last_ts: new Date(episode.lastWall).toISOString(), lines: episode.lines };
  }

  private close(burst: Burst, out: ParsedKernelEvent[]): void {
    this.bursts.delete(burst.key);
    if (this.current === burst) this.current = undefined;
    this.stats.events += 1;
    let data: KernelEventData = burst.data;
    const known = this.episodes.get(burst.key);
    if (known) this.dateUndated(known);
    if (known && Math.abs(burst.firstClock - known.lastClock) <= this.quietMs) {
      // The episode's next event: what it counted is told first, in order.
      this.tellEpisode(known, out);
      known.lines += burst.data.count;
      known.lastClock = burst.lastClock;
      known.lastWall = Math.max(known.lastWall, burst.lastClockWall);
      known.toldClock = burst.lastClock;
      known.toldWall = known.lastWall;
      known.events += 1;
      // Before it floods, a repeat is told exactly as it always was.
      if (known.events > this.eventsBeforeFolding) data = { ...burst.data, episode: this.episodeOf(known) };
    } else {
      if (known) this.episodes.delete(burst.key);
      this.remember(burst, out);
    }
    out.push({
      ts: new Date(burst.tsMs).toISOString(),
      data,
      position: burst.position,
      ...(burst.claimedMs !== undefined ? { claimedTs: claimedText(burst.claimedMs) } : {}),
    });
  }

  /** A fault just told begins an episode; past the bound, the oldest episode is told and forgotten. */
  private remember(burst: Burst, out: ParsedKernelEvent[]): void {
    if (this.episodes.size >= this.maxEpisodes) {
      const oldest = this.episodes.values().next().value;
      if (oldest) {
        this.tellEpisode(oldest, out);
        this.episodes.delete(oldest.key);
      }
    }
    const { details: _details, ...template } = burst.data;
    this.episodes.set(burst.key, {
      key: burst.key,
      template,
      firstMs: burst.tsMs,
      lines: burst.data.count,
      events: burst.flooding ? this.eventsBeforeFolding : 1,
      lastClock: burst.lastClock,
      lastWall: burst.lastClockWall,
      toldClock: burst.lastClock,
      toldWall: burst.lastClockWall,
      pending: 0,
      pendingWall: 0,
      pendingPosition: 0,
    });
  }
}

/**
 * Whether a prefix that first differs from `dated` at `differs` (a digit) differs in a fraction of
 * a second only: the digits before it run back to a decimal point (`…:00.004500` against
 * `…:00.000000`, `[ 12.345]`).
 */
function withinSecond(dated: string, differs: number): boolean {
  let j = differs - 1;
  while (j >= 0 && isDigit(dated.charCodeAt(j))) j -= 1;
  return j >= 0 && dated.charCodeAt(j) === 46; // 46: '.'
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** A claimed stamp as text: ISO-8601 where it can be written so, else its ms since the epoch (a journal's 20-digit µs). */
function claimedText(ms: number): string {
  return ms >= 0 && ms <= LATEST_ISO_MS ? new Date(ms).toISOString() : `${ms} ms since the epoch`;
}
