import { collectDefaultMetrics, Registry } from 'prom-client';

const registries = new Map<string, Registry>();

/**
 * The Node process's own metrics, named with `prefix` (`gpualert_engine_`, …): resident memory,
 * the V8 heap by space (`…nodejs_heap_space_size_used_bytes{space="new"|"old"|…}`), external and
 * array-buffer memory, event-loop delay, GC time, CPU and open handles (prom-client's defaults).
 * One registry a prefix and process: `gpualert up` runs several services in one process, each
 * showing it under its own name; a second call gives the first registry back.
 */
export function processMetrics(prefix: string): Registry {
  let registry = registries.get(prefix);
  if (registry === undefined) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix });
    registries.set(prefix, registry);
  }
  return registry;
}
