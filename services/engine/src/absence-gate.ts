import type { EngineState } from '@gpualert/engine';
import { TOPICS } from '@gpualert/schema';

/**
 * A samples partition that has delivered nothing this long after an assignment counts as caught up,
 * and input stalled this long no longer holds absence back.
 */
export const UNHEARD_PARTITION_MS = 60_000;

/**
 * Whether the wall clock may judge absence now. Not while this instance is catching up on its
 * samples partitions: a host whose samples wait in a backlog (after an outage or a restart) has
 * not gone silent, and calling it down would page for the pipeline rather than the host. Nor
 * while no samples come at all (Kafka away, the group rejoining): with many hosts, batches arrive
 * far more often than any one host reports, so two of the fastest host's intervals with none
 * means the input stopped, not the hosts. After a minute of nothing, hosts are judged again: a
 * fleet (or a pipeline) silent that long deserves the alerts. Input that stopped resumes partition
 * by partition (one Kafka broker of three killed: its partitions come back last), so a stall is
 * treated as a new assignment when samples come back: absence waits until every samples partition
 * has delivered again.
 */
export class AbsenceGate {
  private readonly behind = new Map<string, number>();
  private samplesPartitions: string[] = [];
  private assignedAt: number;
  private lastSamplesAt: number;
  /** The fastest host's interval, as of the last `open`: how long a gap in samples means the input stopped. */
  private fastestMs = Infinity;

  constructor(private readonly now: () => number = Date.now) {
    this.assignedAt = now();
    this.lastSamplesAt = now();
  }

  /** A new assignment: its samples partitions are behind until each says otherwise (or stays unheard a minute). */
  assigned(partitions: readonly { readonly topic: string; readonly partition: number }[]): void {
    this.samplesPartitions = partitions.filter((p) => p.topic === TOPICS.gpuSamples).map((p) => `${p.topic}/${p.partition}`);
    this.assignedAt = this.now();
    this.behind.clear();
  }

  /** A batch judged: how far behind its partition still is. */
  judged(topic: string, partition: number, lag: number): void {
    if (topic === TOPICS.gpuSamples) {
      const now = this.now();
      if (now - this.lastSamplesAt > 2 * this.fastestMs) {
        // Samples back after a stall, this partition first: every other is unheard again, for at most a minute from the stall's start.
        this.assignedAt = this.lastSamplesAt;
        this.behind.clear();
      }
      this.lastSamplesAt = now;
    }
    this.behind.set(`${topic}/${partition}`, lag);
  }

  private catchingUp(): boolean {
    const unheard = this.now() - this.assignedAt < UNHEARD_PARTITION_MS ? 1 : 0;
    return this.samplesPartitions.some((position) => (this.behind.get(position) ?? unheard) > 0);
  }

  private inputStalled(state: EngineState): boolean {
    const quiet = this.now() - this.lastSamplesAt;
    let fastest = Infinity; // a loop, not Math.min(...): tens of thousands of hosts overflow the argument list
    for (const host of Object.values(state.hosts)) fastest = Math.min(fastest, host.intervalMs);
    this.fastestMs = fastest;
    return quiet > 2 * fastest && quiet < UNHEARD_PARTITION_MS;
  }

  /** Whether absence may be judged now. */
  open(state: EngineState): boolean {
    return !this.inputStalled(state) && !this.catchingUp();
  }
}
