import { busConformance } from './bus-conformance.ts';
import { MemoryBus } from './memory-bus.ts';

busConformance('in-process (embedded mode)', async () => new MemoryBus({ partitions: 4, maxBatchSize: 50 }), 500);
