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
}

const MONTHS: Record<string, number> = {
  Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11,
};

const PRINTK_LEVEL = /^<\d>/;
const KMSG = /^(\d+),(\d+),(\d+),[^;]*;/;
const DECODE = /^[a-z]+\s*:[a-z]+\s*: /;
const ISO = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)? /;
const SYSLOG = /^([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d) /;
const HOST_KERNEL = /^\S+ kernel: /;
const UPTIME = /^\[\s*(\d+)\.(\d+)\] ?/;
const CTIME = /^\[(?:[A-Z][a-z]{2} )([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d) (\d{4})\] ?/;
const CALLER = /^\[\s*[TC]\d+\] ?/;

/**
 * Takes apart every prefix gpualert meets: `[  123.456]`, `[ 130.456] [ T1946]`, `dmesg -T`,
 * dmesg `--time-format iso` with or without `--decode`, journalctl `short-iso`, syslog, and
 * /dev/kmsg's `pri,seq,usec,flags;`. Times without a zone are taken as UTC; syslog's missing
 * year comes from `referenceYear`.
 */
export function stripPrefix(raw: string, referenceYear: number): KernelLine {
  const first = raw.charCodeAt(0);
  if (first === 32 || first === 9) return { message: raw.trim(), continuation: true };
  let rest = raw;
  let wallMs: number | undefined;
  let uptimeS: number | undefined;
  let seq: number | undefined;

  if (first === 60 /* < */) rest = rest.replace(PRINTK_LEVEL, '');
  const c = rest.charCodeAt(0);
  if (c >= 48 && c <= 57) {
    const kmsg = KMSG.exec(rest);
    if (kmsg) {
      seq = Number(kmsg[2]);
      uptimeS = Number(kmsg[3]) / 1e6;
      return { message: rest.slice(kmsg[0].length), uptimeS, seq, continuation: false };
    }
    const iso = ISO.exec(rest);
    if (iso) {
      wallMs = isoMs(iso[1]!, iso[2], iso[3]);
      rest = rest.slice(iso[0].length).replace(HOST_KERNEL, '');
    }
  } else if (c === 107 /* k */ && DECODE.test(rest)) {
    rest = rest.replace(DECODE, '');
    const iso = ISO.exec(rest);
    if (iso) {
      wallMs = isoMs(iso[1]!, iso[2], iso[3]);
      rest = rest.slice(iso[0].length);
    }
  } else if (c >= 65 && c <= 90) {
    const syslog = SYSLOG.exec(rest);
    if (syslog) {
      wallMs = Date.UTC(referenceYear, MONTHS[syslog[1]!] ?? 0, Number(syslog[2]), Number(syslog[3]), Number(syslog[4]), Number(syslog[5]));
      rest = rest.slice(syslog[0].length).replace(HOST_KERNEL, '');
    }
  }
  if (rest.charCodeAt(0) === 91 /* [ */) {
    const uptime = UPTIME.exec(rest);
    if (uptime) {
      uptimeS = Number(`${uptime[1]}.${uptime[2]}`);
      rest = rest.slice(uptime[0].length);
    } else {
      const ctime = CTIME.exec(rest);
      if (ctime) {
        wallMs = Date.UTC(Number(ctime[6]), MONTHS[ctime[1]!] ?? 0, Number(ctime[2]), Number(ctime[3]), Number(ctime[4]), Number(ctime[5]));
        rest = rest.slice(ctime[0].length).replace(HOST_KERNEL, '');
      }
    }
    if (rest.charCodeAt(0) === 91) rest = rest.replace(CALLER, '');
  }
  const line: { -readonly [K in keyof KernelLine]: KernelLine[K] } = { message: rest, continuation: false };
  if (wallMs !== undefined && !Number.isNaN(wallMs)) line.wallMs = wallMs;
  if (uptimeS !== undefined) line.uptimeS = uptimeS;
  if (seq !== undefined) line.seq = seq;
  return line;
}

function isoMs(datetime: string, fraction: string | undefined, zone: string | undefined): number {
  const ms = fraction ? `.${fraction.slice(0, 3).padEnd(3, '0')}` : '';
  let offset = zone ?? 'Z';
  if (/^[+-]\d{4}$/.test(offset)) offset = `${offset.slice(0, 3)}:${offset.slice(3)}`;
  return Date.parse(`${datetime}${ms}${offset}`);
}
