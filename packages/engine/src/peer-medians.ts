import type { GpuMetrics } from '@gpualert/schema';

export type PeerMetric = { [K in keyof GpuMetrics]-?: GpuMetrics[K] extends number | null ? K : never }[keyof GpuMetrics];

/** Up to this many GPUs, comparing each with each is cheaper than sorting (every real machine: 8 or 16). */
export const PEER_DIRECT_UP_TO = 32;

/**
 * For each GPU of one sample (by position), the median of `metric` over its siblings: the other
 * GPUs with a value whose utilisation is within `band` of its own; NaN where the GPU has no value
 * or utilisation, or fewer than two siblings. Each with each for a machine's handful of GPUs; for
 * a big sample, a window sliding over the GPUs in utilisation order with the values counted in a
 * Fenwick tree, so n GPUs cost n log n rather than n² (or n³ with the sort).
 */
export function peerMedians(gpus: readonly GpuMetrics[], metric: PeerMetric, band: number): Float64Array {
  if (gpus.length > PEER_DIRECT_UP_TO) return sliding(gpus, metric, band);
  return Float64Array.from(gpus, (gpu) => peerMedian(gpus, gpu, metric, band));
}

/** The peer medians of one sample, made once per rule for all its GPUs when the sample is big. */
export class SamplePeers {
  private cache: Map<string, Float64Array> | undefined;

  constructor(private readonly gpus: readonly GpuMetrics[]) {}

  /** The peer median of the GPU at `position` under a rule (`id`, `metric`, `load_band`). */
  of(rule: { readonly id: string; readonly metric: PeerMetric; readonly load_band: number }, position: number): number {
    if (this.gpus.length <= PEER_DIRECT_UP_TO) {
      const gpu = this.gpus[position];
      return gpu === undefined ? Number.NaN : peerMedian(this.gpus, gpu, rule.metric, rule.load_band);
    }
    let medians = (this.cache ??= new Map()).get(rule.id);
    if (!medians) this.cache.set(rule.id, (medians = peerMedians(this.gpus, rule.metric, rule.load_band)));
    return medians[position] ?? Number.NaN;
  }
}

/** One GPU's peer median by comparing it with each other GPU: the cheaper way for a machine's handful. */
export function peerMedian(gpus: readonly GpuMetrics[], gpu: GpuMetrics, metric: PeerMetric, band: number): number {
  const util = gpu.util_pct;
  if (gpu[metric] === null || util === null) return Number.NaN;
  const siblings = SIBLINGS; // scratch, reused: the healthy path allocates nothing
  siblings.length = 0;
  for (const other of gpus) {
    const v = other[metric];
    if (other !== gpu && v !== null && other.util_pct !== null && Math.abs(other.util_pct - util) <= band) siblings.push(v);
  }
  return siblings.length >= 2 ? median(siblings) : Number.NaN;
}

const SIBLINGS: number[] = [];

/** A GPU with both numbers, where it stands in value order (its slot in the tree). */
interface Candidate {
  readonly index: number;
  readonly util: number;
  readonly value: number;
  slot: number;
}

function sliding(gpus: readonly GpuMetrics[], metric: PeerMetric, band: number): Float64Array {
  const out = new Float64Array(gpus.length).fill(Number.NaN);
  // The candidates: GPUs with both a value and a utilisation, in utilisation order.
  const candidates: Candidate[] = [];
  for (const [index, gpu] of gpus.entries()) {
    const util = gpu.util_pct;
    const value = gpu[metric];
    // Finite only (all JSON can carry): NaN would break the order the window slides along.
    if (util !== null && value !== null && Number.isFinite(value) && Number.isFinite(util)) candidates.push({ index, util, value, slot: 0 });
  }
  const m = candidates.length;
  if (m < 3 || !(band >= 0)) return out; // nobody can have two siblings
  candidates.sort((a, b) => a.util - b.util || a.index - b.index);
  // Each candidate's slot in value order (ties in utilisation order): the tree counts which slots are in the window.
  const sorted = new Float64Array(m);
  [...candidates]
    .sort((a, b) => a.value - b.value || a.util - b.util || a.index - b.index)
    .forEach((c, s) => {
      c.slot = s;
      sorted[s] = c.value;
    });
  const tree = new Int32Array(m + 1);
  const add = (s: number, d: number) => {
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- a Fenwick tree: 1 <= i <= m, inside the array
    for (let i = s + 1; i <= m; i += i & -i) tree[i]! += d;
  };
  let top = 1;
  while (top * 2 <= m) top *= 2;
  // The k-th smallest value in the window (k from 1): a descent of the tree.
  const kth = (k: number) => {
    let pos = 0;
    for (let step = top; step > 0; step >>= 1) {
      const count = tree[pos + step];
      if (count !== undefined && count < k) {
        pos += step;
        k -= count;
      }
    }
    return sorted[pos] ?? Number.NaN;
  };
  // The window is contiguous in utilisation order and only moves right: |u' - u| <= band, as the direct form tests it.
  let lo = 0;
  let hi = 0;
  for (const [k, c] of candidates.entries()) {
    for (let next = candidates[hi]; next !== undefined && Math.abs(next.util - c.util) <= band; next = candidates[++hi]) add(next.slot, 1);
    for (let first = candidates[lo]; lo < k && first !== undefined && !(Math.abs(first.util - c.util) <= band); first = candidates[++lo]) add(first.slot, -1);
    const count = hi - lo - 1; // the window less the GPU itself
    if (count < 2) continue;
    add(c.slot, -1);
    const mid = count >> 1;
    out[c.index] = count % 2 ? kth(mid + 1) : (kth(mid) + kth(mid + 1)) / 2;
    add(c.slot, 1);
  }
  return out;
}

/** The median of numbers the caller made for the purpose: sorted in place (insertion sort for a few, else the library sort). */
export function median(values: number[]): number {
  const sorted = values;
  if (sorted.length > PEER_DIRECT_UP_TO) {
    sorted.sort((a, b) => a - b);
  } else {
    // Indexes kept inside the array: a read past either end (sorted[-1]) is a slow property lookup on the per-sample path.
    for (let i = 1; i < sorted.length; i += 1) {
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- 0 < i < length
      const v = sorted[i]!;
      let j = i - 1;
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- 0 <= j < i
      for (; j >= 0 && sorted[j]! > v; j -= 1) sorted[j + 1] = sorted[j]!;
      sorted[j + 1] = v;
    }
  }
  return middleOf(sorted);
}

/** The median of sorted numbers; NaN for none. */
export function middleOf(sorted: readonly number[]): number {
  const mid = sorted.length >> 1;
  const upper = sorted[mid] ?? Number.NaN;
  return sorted.length % 2 ? upper : ((sorted[mid - 1] ?? Number.NaN) + upper) / 2;
}
