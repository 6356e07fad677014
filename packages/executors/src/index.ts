export type { Executor } from './executor.ts';
export { DEFAULT_PARTITION_LABEL, KubernetesExecutor, loadKubeConfig, type KubernetesExecutorOptions } from './kubernetes-executor.ts';
export { CORDON_ANNOTATION, REASON_ANNOTATION, TAINT_KEY } from './quarantine-taint.ts';
export { SlurmExecutor } from './slurm-executor.ts';
