// What tests and benches share, and production code never imports (test/import-graph.test.ts).
export { busConformance } from './bus-conformance.ts';
export { stateConformance } from './state-conformance.ts';
export { uniqueName, waitFor } from './wait-for.ts';
export { hostileEnvelope, PROTOTYPE_KEYS, SENTINEL_HOST } from './hostile-envelopes.ts';
export { shippedCatalog } from './shipped-catalog.ts';
export { hostName, random, syntheticFleet, type FleetOptions } from './synthetic-fleet.ts';
export { syntheticFleetSnapshot, syntheticFleetSource } from './synthetic-fleet-snapshot.ts';
export { hostsOn, inventory, PARTITIONS, T0 } from './fleet-fixtures.ts';
export { xidFlood, XID_FLOOD_BUSES } from './xid-flood.ts';
