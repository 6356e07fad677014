/**
 * A GPU's PCI address from a `bus → index` map, by an index made once per map rather than a
 * scan per question: a sample of n GPUs asks n times (n² by scanning). A map that changes in
 * place must be passed to `forgetBusIndex` when it does.
 */
export function busByIndex(buses: Readonly<Record<string, number>> | undefined, index: number): string | undefined {
  if (!buses) return undefined;
  let byIndex = INDEXES.get(buses);
  if (!byIndex) {
    byIndex = new Map();
    // The first bus naming an index wins, as a scan in key order would find it.
    for (const [bus, index] of Object.entries(buses)) if (!byIndex.has(index)) byIndex.set(index, bus);
    INDEXES.set(buses, byIndex);
  }
  return byIndex.get(index);
}

/** Drops the index made for `buses` after it changed in place. */
export function forgetBusIndex(buses: Readonly<Record<string, number>>): void {
  INDEXES.delete(buses);
}

const INDEXES = new WeakMap<Readonly<Record<string, number>>, Map<number, string>>();
