export type { Executor, SchedulerInventory } from './executor.ts';
export { SlurmExecutor, type SlurmExecutorOptions } from './slurm-executor.ts';
