export * from './bus.ts';
export { MemoryBus, type MemoryBusOptions } from './memory-bus.ts';
export { KafkaBus, type KafkaBusOptions } from './kafka-bus.ts';
export { partitionFor } from './partition-for.ts';
