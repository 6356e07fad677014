/**
 * Where the engine keeps its state in the shared store: the engine service writes these, and the
 * console's fleet snapshot and host forgetting read or delete them. One definition for all three.
 */
export const engineHostKey = (host: string) => `engine:host:${host}`;
/** The hosts seen on partition p (of every input topic: they are co-partitioned). */
export const enginePartitionKey = (partition: number) => `engine:partition:${partition}`;
/** The fleet-wide state this instance keeps whole: training jobs (`fleet.training`). Stragglers and clusters are shared per host (`ENGINE_FLEET_SHARES_KEY`). */
export const ENGINE_FLEET_KEY = 'engine:fleet';
/** Each host's share of the fleet-wide facts (`fleet-shares.ts`): a hash, one field per host, written by the engine that owns it. */
export const ENGINE_FLEET_SHARES_KEY = 'engine:fleet:hosts';
