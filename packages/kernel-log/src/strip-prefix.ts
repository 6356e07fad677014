import { must } from '@gpualert/schema';

/** One kernel log line with its prefix taken apart. */
export interface KernelLine {
  /** The message after every prefix. */
  readonly message: string;
  /** Wall-clock time the prefix gave, ms since the epoch. */
  readonly wallMs?: number;
  /** Seconds since boot the prefix gave (`[  123.456]`, kmsg's microseconds). */
  readonly uptimeS?: number;
  /** /dev/kmsg's sequence number, for resuming without gaps or duplicates. */
  readonly seq?: number;
  /** The raw line began with white space: the continuation of the previous message. */
  readonly continuation: boolean;
  /** Seconds since the previous line (`dmesg -H`/`--time-format reltime|delta`: `[  +0.000844]`). */
  readonly deltaS?: number;
  /** The wall time's year was not on the line (syslog, `dmesg -H`): it came from the reference year. */
  readonly yearGuessed?: boolean;
  /** A container runtime's partial line (CRI `P`, Docker JSON without its newline): the next line completes it. */
  readonly partial?: boolean;
}

type MutableLine = { -readonly [K in keyof KernelLine]: KernelLine[K] };

const MONTHS: Record<string, number> = {
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11,
};

/** A JSON line longer than this is not parsed (a journal record or Docker line is far shorter). */
const MAX_JSON_LINE = 65_536;

const ANSI = /\x1b\[[0-9;]*m/g;
const PRIORITY = /^<(\d{1,3})>/;
const RFC5424 = /^1 (\S+) \S+ \S+ \S+ \S+ (?:-|(?:\[(?:[^\]\\]|\\.)*\])+) ?(?:\uFEFF)?/;
const KMSG = /^(\d+),(\d+),(\d+),[^;]*;/;
const DECODE = /^[a-z0-9]+\s*:[a-z]+\s*: /;
const ISO = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:([.,])(\d+))?(Z|[+-]\d\d:?\d\d)? /;
const UNIX = /^(\d{9,11})\.(\d{1,9}) /;
const CRI = /^(?:stdout|stderr) ([FP]) /;
const SYSLOG = /^([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))? /;
const FULL = /^[A-Z][a-z]{2} (\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))? ([A-Za-z]{1,5}|[+-]\d{4}) /;
const KERNEL_TAG = /^ *(?:\S+ +)?kernel: */;
/** `host ident[pid]: ` after a journal/syslog stamp; the ident starts with a letter so a PCI address never matches. */
const HOST_IDENT = /^[\w.-]+ [A-Za-z][\w.@/-]*(?:\[\d+\])?: /;
const IDENT_PID = /^[A-Za-z][\w.@/-]*\[\d+\]: /;
const UPTIME = /^\[\s*(\d+)\.(\d+)(?:\s*<\s*\d+\.\d+>)?\] ?/;
const DELTA = /^\[(?:\s*\+|<\s*)(\d+)\.(\d+)>?\] ?/;
const RELTIME = /^\[([A-Z][a-z]{2}) ?([ \d]?\d) (\d\d):(\d\d)\] ?/;
const CTIME = /^\[(?:[A-Z][a-z]{2} )([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d) (\d{4})(?: <\s*\d+\.\d+>)?\] ?/;
const CALLER = /^\[\s*[TC]\d+\] ?/;
/** `talosctl dmesg`: `192.168.11.119: kern:     err: [2026-04-22T21:25:20.466440686Z]: `. */
const TALOS = /^(?:\S+: )?kern:\s+[a-z]+: \[([0-9T:.+Z-]+)\]: /;
/** A serial-console logger's own stamp before the kernel's: `[2023-06-22 21:55:31.352444][5975153.869131] `. */
const CONSOLE = /^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?\] ?/;
const STAMPED = /^\[(?:\s*\+?\d+\.\d+[\]\s]|<\s*\d|[A-Z][a-z]{2}[ \d]|\d{4}-\d\d-\d\d )/;

/**
 * Takes apart every prefix gpualert meets: dmesg in all its time formats (`[  123.456]`, `-T`/ctime,
 * `-H`/reltime with `[  +0.000844]` deltas, `--time-format delta|iso`, `-x` decode, `-r` raw levels,
 * `-d` show-delta, caller ids); journalctl `-o short|short-iso|short-precise|short-monotonic|
 * short-unix|short-full|with-unit|cat|json` with or without the host name; syslog/rsyslog
 * (RFC 3164 with or without a priority, RFC 5424, rsyslog's ISO file format); /dev/kmsg's
 * `pri,seq,usec,flags;`; a bare `kernel: `; and container wrappers (CRI `… stdout F …`, Docker
 * JSON lines), whose inner line is taken apart again. Times without a zone are taken as UTC;
 * a missing year comes from `referenceYear`.
 */
export function stripPrefix(raw: string, referenceYear: number): KernelLine {
  return strip(raw.indexOf('\x1b') === -1 ? raw : raw.replace(ANSI, ''), referenceYear, 0);
}

function strip(raw: string, referenceYear: number, depth: number): MutableLine {
  const first = raw.charCodeAt(0);
  if (first === 32 || first === 9) {
    // A pasted log indented as a block is still one line per stamp; a kernel continuation never starts with one.
    const trimmed = raw.trimStart();
    if (STAMPED.test(trimmed) || SYSLOG.test(trimmed) || ISO.test(trimmed) || trimmed.startsWith('kernel:')) return strip(trimmed, referenceYear, depth);
    return { message: raw.trim(), continuation: true };
  }
  if (first === 123 /* { */ && depth === 0) {
    const json = fromJson(raw, referenceYear);
    if (json) return json;
  }
  const line: MutableLine = { message: raw, continuation: false };
  let rest = raw;

  if (first === 60 /* < */) {
    const priority = PRIORITY.exec(rest);
    if (priority) {
      rest = rest.slice(priority[0].length);
      if (rest.charCodeAt(0) === 49 /* 1 */ && rest.charCodeAt(1) === 32) {
        const rfc = RFC5424.exec(rest);
        if (rfc) {
          const iso = ISO.exec(`${rfc[1]} `);
          if (iso) setWall(line, isoStampMs(iso));
          rest = rest.slice(rfc[0].length);
        }
      }
    }
  }
  const c0 = rest.charCodeAt(0);
  if (c0 !== 91 /* [ */ && c0 !== 60 /* < */) {
    const talos = TALOS.exec(rest);
    if (talos) {
      const iso = ISO.exec(`${talos[1]} `);
      if (iso) setWall(line, isoStampMs(iso));
      line.message = rest.slice(talos[0].length);
      return line;
    }
  }
  const c = rest.charCodeAt(0);
  if (c >= 48 && c <= 57) {
    const kmsg = KMSG.exec(rest);
    if (kmsg) {
      line.seq = Number(kmsg[2]);
      line.uptimeS = Number(kmsg[3]) / 1e6;
      line.message = rest.slice(kmsg[0].length);
      return line;
    }
    const iso = ISO.exec(rest);
    if (iso) {
      setWall(line, isoStampMs(iso));
      rest = rest.slice(iso[0].length);
      const cri = CRI.exec(rest);
      if (cri) return inner(line, rest.slice(cri[0].length), cri[1] === 'P', referenceYear, depth);
      // dmesg's own ISO format writes a comma before the fraction and no host; journals and rsyslog name the host.
      rest = afterStamp(rest, iso[2] !== ',');
    } else {
      const unix = UNIX.exec(rest);
      if (unix) {
        setWall(line, Number(unix[1]) * 1000 + Number(must(unix[2], 'UNIX has no optional group').slice(0, 3).padEnd(3, '0')));
        rest = afterStamp(rest.slice(unix[0].length), true);
      }
    }
  } else if (c >= 97 && c <= 122) {
    if (rest.startsWith('kernel:')) {
      rest = rest.slice(7).trimStart();
    } else if (DECODE.test(rest)) {
      rest = rest.replace(DECODE, '');
      const iso = ISO.exec(rest);
      if (iso) {
        setWall(line, isoStampMs(iso));
        rest = rest.slice(iso[0].length);
      }
    }
  } else if (c >= 65 && c <= 90) {
    const syslog = SYSLOG.exec(rest);
    if (syslog) {
      const ms = syslog[6] ? Number(syslog[6].slice(0, 3).padEnd(3, '0')) : 0;
      setWall(line, Date.UTC(referenceYear, MONTHS[syslog[1] ?? ''] ?? 0, Number(syslog[2]), Number(syslog[3]), Number(syslog[4]), Number(syslog[5]), ms));
      line.yearGuessed = true;
      rest = afterStamp(rest.slice(syslog[0].length), true);
    } else {
      const full = FULL.exec(rest);
      if (full) {
        const zone = full[4] !== undefined && /^[+-]\d{4}$/.test(full[4]) ? full[4] : 'Z';
        setWall(line, isoMs(`${full[1]}T${full[2]}`, full[3], zone));
        rest = afterStamp(rest.slice(full[0].length), true);
      }
    }
  }
  if (rest.charCodeAt(0) === 91 /* [ */) {
    const uptime = UPTIME.exec(rest);
    if (uptime) {
      line.uptimeS = Number(`${uptime[1]}.${uptime[2]}`);
      rest = rest.slice(uptime[0].length);
      // journalctl -o short-monotonic: the host and tag come after the uptime
      if (line.wallMs === undefined) rest = afterStamp(rest, false);
    } else {
      const delta = DELTA.exec(rest);
      if (delta) {
        line.deltaS = Number(`${delta[1]}.${delta[2]}`);
        rest = rest.slice(delta[0].length);
      } else {
        const rel = RELTIME.exec(rest);
        if (rel) {
          setWall(line, Date.UTC(referenceYear, MONTHS[rel[1] ?? ''] ?? 0, Number(rel[2]), Number(rel[3]), Number(rel[4])));
          line.yearGuessed = true;
          rest = rest.slice(rel[0].length);
        } else {
          const ctime = CTIME.exec(rest);
          if (ctime) {
            setWall(line, Date.UTC(Number(ctime[6]), MONTHS[ctime[1] ?? ''] ?? 0, Number(ctime[2]), Number(ctime[3]), Number(ctime[4]), Number(ctime[5])));
            rest = afterStamp(rest.slice(ctime[0].length), false);
          } else {
            const console = CONSOLE.exec(rest);
            if (console) {
              setWall(line, isoMs(`${console[1]}T${console[2]}`, console[3], undefined));
              rest = rest.slice(console[0].length);
              const uptime = UPTIME.exec(rest);
              if (uptime) {
                line.uptimeS = Number(`${uptime[1]}.${uptime[2]}`);
                rest = rest.slice(uptime[0].length);
              }
            }
          }
        }
      }
    }
    if (rest.charCodeAt(0) === 91) rest = rest.replace(CALLER, '');
  }
  line.message = rest;
  return line;
}

/** What follows a journal or syslog stamp: `kernel: `, `host kernel: `, and with `hosted`, `host ident[pid]: `. */
function afterStamp(rest: string, hosted: boolean): string {
  const kernel = KERNEL_TAG.exec(rest);
  if (kernel) return rest.slice(kernel[0].length);
  if (!hosted) return rest;
  const ident = HOST_IDENT.exec(rest) ?? IDENT_PID.exec(rest);
  return ident ? rest.slice(ident[0].length) : rest;
}

/** A container runtime's line: the inner line is taken apart too; its own time wins over the wrapper's. */
function inner(outer: MutableLine, text: string, partial: boolean, referenceYear: number, depth: number): MutableLine {
  // strip() returns a fresh object: it is this line's own to complete
  const line: MutableLine = depth < 2 ? strip(text, referenceYear, depth + 1) : { message: text, continuation: false };
  // A wrapped line that began with white space is still its own line: the wrapper says where lines start.
  if (line.continuation) line.continuation = false;
  if (line.wallMs === undefined && outer.wallMs !== undefined) {
    line.wallMs = outer.wallMs;
    delete line.yearGuessed;
  }
  if (partial) line.partial = true;
  return line;
}

/** journalctl -o json (MESSAGE, __REALTIME_TIMESTAMP µs) and Docker's json-file lines (log, time). */
function fromJson(raw: string, referenceYear: number): MutableLine | undefined {
  if (raw.length > MAX_JSON_LINE) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const message = record.MESSAGE;
  if (typeof message === 'string' || Array.isArray(message)) {
    const text = typeof message === 'string' ? message : bytesToText(message);
    if (text === undefined) return undefined;
    const line: MutableLine = { message: text, continuation: false };
    const realtime = Number(record.__REALTIME_TIMESTAMP);
    if (Number.isFinite(realtime) && realtime > 0) setWall(line, Math.floor(realtime / 1000));
    const monotonic = Number(record.__MONOTONIC_TIMESTAMP);
    if (Number.isFinite(monotonic) && monotonic > 0) line.uptimeS = monotonic / 1e6;
    return line;
  }
  if (typeof record.log === 'string') {
    const outer: MutableLine = { message: '', continuation: false };
    if (typeof record.time === 'string') {
      const iso = ISO.exec(`${record.time} `);
      if (iso) setWall(outer, isoStampMs(iso));
    }
    const log = record.log;
    const complete = log.endsWith('\n');
    return inner(outer, complete ? log.slice(0, log.endsWith('\r\n') ? -2 : -1) : log, !complete, referenceYear, 1);
  }
  return undefined;
}

/** journald writes a message that is not valid UTF-8 as an array of bytes. */
function bytesToText(bytes: unknown[]): string | undefined {
  if (bytes.length > MAX_JSON_LINE || !bytes.every((b): b is number => typeof b === 'number' && Number.isInteger(b) && b >= 0 && b <= 255)) return undefined;
  return Buffer.from(bytes).toString('utf8');
}

function setWall(line: MutableLine, ms: number): void {
  if (!Number.isNaN(ms)) line.wallMs = ms;
}

/** An `ISO` match's time in milliseconds (NaN for an impossible date). */
function isoStampMs(iso: RegExpExecArray): number {
  return isoMs(must(iso[1], "ISO's first group is not optional"), iso[3], iso[4]);
}

/** `2025-12-02T11:49:53` with its fraction and zone (`Z`, `+01:00`, `+0100`; none is UTC), without Date.parse's string work. */
function isoMs(datetime: string, fraction: string | undefined, zone: string | undefined): number {
  const n = (from: number, to: number) => Number(datetime.slice(from, to));
  const month = n(5, 7);
  const day = n(8, 10);
  const hour = n(11, 13);
  const minute = n(14, 16);
  const second = n(17, 19);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 24 || minute > 59 || second > 60) return Number.NaN;
  const ms = fraction ? Number(fraction.slice(0, 3).padEnd(3, '0')) : 0;
  let offsetMin = 0;
  if (zone !== undefined && zone !== 'Z') {
    const sign = zone.charCodeAt(0) === 45 /* - */ ? -1 : 1;
    const digits = zone.replace(':', '');
    offsetMin = sign * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5)));
  }
  return Date.UTC(n(0, 4), month - 1, day, hour, minute, second, ms) - offsetMin * 60_000;
}
