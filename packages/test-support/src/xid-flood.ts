/**
 * A flood of one Xid, shaped after NVSentinel's report (https://github.com/NVIDIA/NVSentinel/issues/1120:
 * "over ~800K entries of XID 95 on a problematic node but we had only 29 distinct entries"). The
 * report gives the counts, not the lines; each line here is the Xid 95 line of
 * test/fixtures/kernel/dmesg-ecc-rowremap.log with its pid varied (29 distinct texts), under a
 * journalctl `short-iso` prefix. Synthetic: the counts are the report's, the text is not its.
 */
export interface XidFloodOptions {
  /** Lines in all (800,000 in the report). */
  readonly lines: number;
  /** Distinct texts (29 in the report). */
  readonly distinct?: number;
  /** The GPUs' PCI buses; lines go to each in turn. */
  readonly buses?: readonly string[];
  /** The first line's time, ms since the epoch. */
  readonly startMs: number;
  /** Time between two lines. */
  readonly spacingMs: number;
}

export const XID_FLOOD_BUSES = ['0000:01:00', '0000:41:00'] as const;

/** The flood's lines, in order; line i is dated `startMs + i × spacingMs`. */
export function xidFlood(options: XidFloodOptions): string[] {
  const distinct = options.distinct ?? 29;
  const buses = options.buses ?? XID_FLOOD_BUSES;
  const texts: string[][] = buses.map((bus) =>
    Array.from({ length: distinct }, (_, k) => `NVRM: Xid (PCI:${bus}): 95, pid=${7062 + k}, Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No`),
  );
  const out = new Array<string>(options.lines);
  let second = -1;
  let stamp = '';
  for (let i = 0; i < options.lines; i += 1) {
    const ms = options.startMs + i * options.spacingMs;
    const s = Math.floor(ms / 1000);
    if (s !== second) {
      second = s;
      stamp = new Date(s * 1000).toISOString().slice(0, 19);
    }
    const micros = String(Math.floor((ms % 1000) * 1000)).padStart(6, '0');
    const forBus = texts[i % buses.length]!;
    out[i] = `${stamp}.${micros}+0000 gpu-node-07 kernel: ${forBus[Math.floor(i / buses.length) % distinct]!}`;
  }
  return out;
}
