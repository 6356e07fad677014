/** The engine's keys in the state store (the store adds the deployment's prefix). */
export const HOST_KEY = (host: string) => `engine:host:${host}`;
export const FLEET_KEY = 'engine:fleet';
export const OPERATOR_KEY = 'engine:operator-resolve';
/** Hosts an operator asked the engines to forget, scored by when. */
export const FORGET_KEY = 'engine:forget';
/** The hosts seen on partition p (of every input topic: they are co-partitioned). */
export const PARTITION_KEY = (partition: number) => `engine:partition:${partition}`;
