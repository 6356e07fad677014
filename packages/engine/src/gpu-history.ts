import { FLEET_METRICS, HISTORY_STEP_MS, MAX_HISTORY_POINTS, type FleetMetric, type GpuHistory, type GpuMetrics, type MetricHistory } from '@gpualert/schema';

/**
 * One GPU's recent values: the last sample of each `step` of event time, the newest
 * MAX_HISTORY_POINTS of them, in typed arrays (about 3 KB a GPU), so a sample costs a few stores
 * and the ring never grows. NaN stands for a value the sample did not carry.
 */
export class GpuHistoryRing {
  private readonly times = new Float64Array(MAX_HISTORY_POINTS);
  private readonly values = new Float32Array(MAX_HISTORY_POINTS * FLEET_METRICS.length);
  private start = 0;
  private size = 0;

  constructor(private readonly step = HISTORY_STEP_MS) {}

  /** Keeps the sample as its step's point (a later sample of the same step replaces it); an older one than the last is passed over. */
  note(at: number, gpu: GpuMetrics): void {
    const last = this.size === 0 ? -1 : (this.start + this.size - 1) % MAX_HISTORY_POINTS;
    const lastAt = last < 0 ? -Infinity : (this.times[last] ?? -Infinity);
    if (at < lastAt) return;
    let slot = last;
    if (last < 0 || Math.floor(at / this.step) !== Math.floor(lastAt / this.step)) {
      if (this.size < MAX_HISTORY_POINTS) this.size += 1;
      else this.start = (this.start + 1) % MAX_HISTORY_POINTS;
      slot = (this.start + this.size - 1) % MAX_HISTORY_POINTS;
    }
    this.times[slot] = at;
    FLEET_METRICS.forEach((metric, m) => {
      const v = gpu[metric];
      this.values[slot * FLEET_METRICS.length + m] = v !== null && Number.isFinite(v) ? v : NaN;
    });
  }

  /** When the newest point was taken; undefined while empty. */
  lastAt(): number | undefined {
    return this.size === 0 ? undefined : this.times[(this.start + this.size - 1) % MAX_HISTORY_POINTS];
  }

  /** The newest point's value of one metric; null while empty or where it was not carried. */
  lastValue(metric: FleetMetric): number | null {
    if (this.size === 0) return null;
    const v = this.values[((this.start + this.size - 1) % MAX_HISTORY_POINTS) * FLEET_METRICS.length + FLEET_METRICS.indexOf(metric)];
    return v === undefined || Number.isNaN(v) ? null : v;
  }

  /**
   * The points oldest first, each metric with its band at that point's load (`bandAt`, from the
   * GPU's baselines as they are now: they move slowly; a point with no utilisation has none).
   */
  view(bandAt: (metric: FleetMetric, util: number | null) => { low: number; high: number } | null): GpuHistory {
    const at: number[] = [];
    const empty = (): MetricHistory => ({ values: [], low: [], high: [] });
    const metrics: Record<FleetMetric, MetricHistory> = { temp_c: empty(), power_w: empty(), util_pct: empty(), mem_used_mib: empty() };
    const utilAt = FLEET_METRICS.indexOf('util_pct');
    for (let i = 0; i < this.size; i += 1) {
      const slot = (this.start + i) % MAX_HISTORY_POINTS;
      at.push(this.times[slot] ?? 0);
      const raw = (m: number): number | null => {
        const v = this.values[slot * FLEET_METRICS.length + m];
        return v === undefined || Number.isNaN(v) ? null : round(v);
      };
      const util = raw(utilAt);
      FLEET_METRICS.forEach((metric, m) => {
        const band = bandAt(metric, util);
        const series = metrics[metric];
        series.values.push(raw(m));
        series.low.push(band ? round(band.low) : null);
        series.high.push(band ? round(band.high) : null);
      });
    }
    return { step_ms: this.step, at, metrics };
  }
}

/** Float32 keeps 7 digits; JSON of 61.400001525878906 would say more than was measured. */
function round(v: number): number {
  return Math.round(v * 100) / 100;
}
