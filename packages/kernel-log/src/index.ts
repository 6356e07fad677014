export { stripPrefix } from './strip-prefix.ts';
export { KernelLogParser, type ParsedKernelEvent } from './kernel-log-parser.ts';
export { parseKernelLog } from './parse-kernel-log.ts';
export { busOf, fromLspciTree, fromSysfsLinks, parseTopology, PciTopology } from './pci-topology.ts';
