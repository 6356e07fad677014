import { KernelLogParser, type KernelLogParserOptions, type KernelLogStats, type ParsedKernelEvent } from './kernel-log-parser.ts';

/** A whole log at once (what `gpualert parse kernel` and the tests use). */
export function parseKernelLog(text: string, options: KernelLogParserOptions, arrivalMs = Date.now()): { events: ParsedKernelEvent[]; stats: KernelLogStats } {
  const parser = new KernelLogParser(options);
  const events: ParsedKernelEvent[] = [];
  let position = 0;
  for (const line of text.split('\n')) {
    if (line.trim() !== '') events.push(...parser.push(line.replace(/\r$/, ''), arrivalMs, position));
    position += Buffer.byteLength(line) + 1;
  }
  events.push(...parser.flush());
  return { events, stats: parser.stats };
}
