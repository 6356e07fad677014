import type { ActionCommand, ExecutionOutcome } from '@gpualert/remediation';

/** What the scheduler says about its nodes: each partition's size and each node's partition(s). */
export interface SchedulerInventory {
  readonly partitions: ReadonlyMap<string, number>;
  /** A node's partition, or every one it is in (a Slurm node may be in several; the breaker charges each). */
  readonly hostPartitions: ReadonlyMap<string, string | readonly string[]>;
}

/**
 * Where actions meet a scheduler (Slurm, Kubernetes). `run` never throws: an API that is down or
 * refuses is an outcome (`failed`, retriable or not), which the core retries with backoff and
 * reports. A drain that already holds is `already_held`, not repeated.
 */
export interface Executor {
  readonly name: string;
  run(command: ActionCommand): Promise<ExecutionOutcome>;
  inventory(): Promise<SchedulerInventory>;
}
