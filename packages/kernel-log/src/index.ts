export * from './strip-prefix.ts';
export * from './classify.ts';
export * from './kernel-log-parser.ts';
export * from './parse-kernel-log.ts';
export * from './pci-topology.ts';
