import { writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { MemoryBus, type Bus } from '@gpualert/bus';
import { embeddedDataDir } from '@gpualert/runtime';
import { exportTimeline, FORMATS, UnknownIncidentError } from '@gpualert/timeline';
import { CliError, EXIT, errorMessage } from '../cli-error.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { READER_SETTINGS } from '../settings/common-settings.ts';
import { oneOf } from '../option-values.ts';

type Options = Record<string, unknown>;

function time(option: string, value: unknown): number {
  const at = Date.parse(String(value));
  if (Number.isNaN(at)) throw new CliError(`gpualert timeline: --${option} expects an ISO-8601 time like 2026-06-01T02:00:00Z (got "${String(value)}")`);
  return at;
}

/** `gpualert timeline --from T --to T [--host H] [--incident FP] [--job J] [--format md|json|csv|html] [--out FILE]`. */
export async function timeline(options: Options): Promise<number> {
  const from = time('from', options.from);
  const to = time('to', options.to);
  if (from >= to) throw new CliError('gpualert timeline: --from must be before --to');
  const format = String(options.format ?? 'md');
  if (!oneOf(FORMATS, format)) throw new CliError(`gpualert timeline: --format must be one of ${FORMATS.join(', ')} (got "${format}")`);
  const config = loadSettings(READER_SETTINGS, options);
  let bus: Bus;
  let where: string;
  if (config.kafkaBrokers) {
    bus = new (await import('@gpualert/bus/kafka')).KafkaBus({ brokers: config.kafkaBrokers, topicPrefix: config.topicPrefix, publishTimeoutMs: 5_000 });
    where = `Kafka at ${config.kafkaBrokers.join(',')}`;
  } else {
    // The embedded mode's own log, as `gpualert up` left it.
    const dataDir = embeddedDataDir(config.dataDir);
    if (!existsSync(dataDir)) throw new CliError(`gpualert timeline: no KAFKA_BROKERS and no embedded log at ${dataDir} (run gpualert up, or give --data-dir)`);
    bus = new MemoryBus({ dataDir });
    where = `the embedded log at ${dataDir}`;
  }
  const started = Date.now();
  try {
    const { timeline: result, text } = await exportTimeline(
      bus,
      {
        from,
        to,
        format,
        ...(options.host ? { host: String(options.host) } : {}),
        ...(options.incident ? { incident: String(options.incident) } : {}),
        ...(options.job !== undefined ? { job: String(options.job) } : {}),
      },
      (topic, count) => {
        if (Date.now() - started > 1_000) process.stderr.write(`read ${topic}: ${count} messages (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
      },
    );
    if (options.out) await writeFile(String(options.out), text);
    else process.stdout.write(text);
    if (result.entries.length === 0) process.stderr.write('gpualert timeline: nothing happened in this range\n');
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UnknownIncidentError) throw new CliError(`gpualert timeline: ${error.message}`);
    throw new CliError(`gpualert timeline: cannot read ${where}: ${errorMessage(error)}`, EXIT.failed);
  } finally {
    await bus.close();
  }
}
