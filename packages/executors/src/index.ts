export type { Executor } from './executor.ts';
export { SlurmExecutor } from './slurm-executor.ts';
