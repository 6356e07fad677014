export * from './topics.ts';
export * from './severity.ts';
export * from './pci-bus.ts';
export * from './metrics.ts';
export * from './data.ts';
export * from './envelope.ts';
export * from './parse-envelope.ts';
export * from './new-envelope.ts';
