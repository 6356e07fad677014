/** Half-open time intervals [start, end) in ms: merged, clipped, subtracted, measured. */
export interface Interval {
  readonly start: number;
  readonly end: number;
}

/** Sorted and merged: no two overlap or touch. */
export function merge(intervals: readonly Interval[]): Interval[] {
  const sorted = intervals.filter((i) => i.end > i.start).sort((a, b) => a.start - b.start);
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out[out.length - 1];
    if (last && i.start <= last.end) out[out.length - 1] = { start: last.start, end: Math.max(last.end, i.end) };
    else out.push({ start: i.start, end: i.end });
  }
  return out;
}

export function clip(intervals: readonly Interval[], from: number, to: number): Interval[] {
  const out: Interval[] = [];
  for (const i of intervals) {
    const start = Math.max(i.start, from);
    const end = Math.min(i.end, to);
    if (end > start) out.push({ start, end });
  }
  return out;
}

/** `a` without what `b` covers; both merged. */
export function subtract(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const i of a) {
    let pieces: Interval[] = [i];
    for (const cut of b) {
      if (cut.end <= i.start || cut.start >= i.end) continue;
      pieces = pieces
        .flatMap((p) => [
          ...(cut.start > p.start ? [{ start: p.start, end: Math.min(cut.start, p.end) }] : []),
          ...(cut.end < p.end ? [{ start: Math.max(cut.end, p.start), end: p.end }] : []),
        ])
        .filter((p) => p.end > p.start);
    }
    out.push(...pieces);
  }
  return out;
}

/** How much of [from, to) the merged intervals cover, in ms. */
export function covered(merged: readonly Interval[], from: number, to: number): number {
  let total = 0;
  for (const i of merged) {
    if (i.start >= to) break;
    const start = Math.max(i.start, from);
    const end = Math.min(i.end, to);
    if (end > start) total += end - start;
  }
  return total;
}
