import { hostname } from 'node:os';
import { parseJobLog } from '@gpualert/collectors';
import { newEnvelope, stableId } from '@gpualert/schema';
import { EXIT } from '../cli-error.ts';
import { readInput } from '../read-input.ts';
import { jobContext, jobPatterns } from './collect-job.ts';
import { stringOption } from '../option-values.ts';

const SOURCE = 'gpualert-parse/0.1.0';

/** `gpualert parse job FILE [--job J] [--rank R] [--host H] [--patterns FILE]`: a training log's job events, offline, as JSONL. */
export async function parseJob(file: string, options: Record<string, unknown>): Promise<number> {
  const context = jobContext('parse job', { ...options, job: options.job ?? 'unknown' });
  const patterns = jobPatterns('parse job', options.patterns);
  const host = stringOption(options, 'host') ?? hostname();
  const text = await readInput('parse job', file);
  const { events, lines } = parseJobLog(text, patterns, context);
  const ts = new Date().toISOString();
  process.stderr.write(`${lines} lines: ${events.length} job events\n`);
  for (const { line, data } of events) {
    const envelope = newEnvelope({ type: 'job.event', id: stableId(host, file, line, data.kind), host, source: SOURCE, ts, data });
    process.stdout.write(`${JSON.stringify(envelope)}\n`);
  }
  return EXIT.ok;
}
