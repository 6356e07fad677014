import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { CommandJobSource, FileLineSource, loadJobPatterns, startJobCollector, type JobLogContext, type JobPattern } from '@gpualert/collectors';
import { createLogger, defaultLogFormat } from '@gpualert/log';
import { envelopeMessage } from '@gpualert/bus';
import { isJobText, MAX_GPU_INDEX, MAX_JOB_RANK, newEnvelope, stableId, TOPICS } from '@gpualert/schema';
import { exitAfterStop, openInfrastructure, stopWithin, untilSignal } from '@gpualert/runtime';
import { CliError, EXIT } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';
import { parseDuration } from '../duration.ts';
import { runService, SERVICE_STOP_LIMIT_MS } from '../run-service.ts';
import { stringOption, stringListOption } from '../option-values.ts';
import { firstRuleError } from './load-files.ts';

type Options = Record<string, unknown>;

/** `--job J [--rank R] [--gpu G]`, checked: the context every event of the log is told with. */
export function jobContext(command: string, options: Options): JobLogContext {
  const job = options.job === undefined ? undefined : String(options.job);
  if (!isJobText(job)) throw new CliError(`gpualert ${command}: --job expects the job's id, 1 to 256 characters on one line`);
  const whole = (name: string, max: number) => {
    if (options[name] === undefined) return undefined;
    const n = Number(options[name]);
    if (!Number.isSafeInteger(n) || n < 0 || n > max)
      throw new CliError(`gpualert ${command}: --${name} expects a whole number from 0 to ${max} (got "${String(options[name])}")`);
    return n;
  };
  const rank = whole('rank', MAX_JOB_RANK);
  const gpu = whole('gpu', MAX_GPU_INDEX);
  return { job, ...(rank !== undefined ? { rank } : {}), ...(gpu !== undefined ? { gpu } : {}) };
}

export function jobPatterns(command: string, file: unknown): JobPattern[] {
  const loaded = loadJobPatterns(file === undefined ? undefined : String(file));
  if (!loaded.ok) throw new CliError(`gpualert ${command}: ${firstRuleError(loaded.errors)}`);
  return loaded.value;
}

function labelsOf(options: Options): Record<string, string> {
  const labels = Object.create(null) as Record<string, string>; // a label key is data, `__proto__` included
  for (const pair of stringListOption(options, 'label') ?? []) {
    const [key, ...rest] = pair.split('=');
    if (!key || rest.length === 0) throw new CliError(`gpualert collect job: --label expects key=value (got "${pair}")`);
    labels[key] = rest.join('=');
  }
  return labels;
}

/**
 * `gpualert collect job --job J [--rank R] --log FILE | --command CMD`: follows a training log (from
 * its end, or `--from-start`) or runs the training command and reads what it prints, and
 * publishes `job.event`s. With `--command` it exits with the command's own status, after
 * publishing an `exit` event for it.
 */
export async function collectJob(options: Options): Promise<number> {
  const context = jobContext('collect job', options);
  const patterns = jobPatterns('collect job', options.patterns);
  const host = stringOption(options, 'host') ?? hostname();
  const labels = labelsOf(options);
  const stepIntervalMs = parseDuration('step-interval', String(options.stepInterval ?? '10s'));
  if ((options.log === undefined) === (options.command === undefined)) throw new CliError('gpualert collect job: give one of --log FILE or --command CMD');
  if (options.log !== undefined) {
    const file = String(options.log);
    let from: number | undefined;
    if (!options.fromStart)
      from = await stat(file).then(
        (s) => s.size,
        () => 0,
      ); // an old log is history, not news
    return runService(
      'collector-job',
      commonConfig(options),
      async ({ bus }, log) =>
        startJobCollector({
          bus,
          source: new FileLineSource(file),
          ...(from !== undefined ? { from } : {}),
          host,
          labels,
          patterns,
          context,
          stepIntervalMs,
          log,
        }),
      { createTopics: false },
    );
  }
  return runCommandJob(String(options.command), options, { host, labels, patterns, context, stepIntervalMs });
}

async function runCommandJob(
  command: string,
  options: Options,
  job: { host: string; labels: Record<string, string>; patterns: JobPattern[]; context: JobLogContext; stepIntervalMs: number },
): Promise<number> {
  const config = commonConfig(options);
  const log = createLogger({ name: 'collector-job', level: config.logLevel, format: config.logFormat ?? defaultLogFormat() });
  const infra = await openInfrastructure(config, log, { createTopics: false });
  const source = new CommandJobSource(command, { stdout: process.stdout, stderr: process.stderr });
  const collector = startJobCollector({
    bus: infra.bus,
    source,
    host: job.host,
    labels: job.labels,
    patterns: job.patterns,
    context: job.context,
    stepIntervalMs: job.stepIntervalMs,
    log,
  });
  const ended = await Promise.race([source.exited.then((code) => ({ code })), untilSignal().then((signal) => ({ signal }))]);
  const code = 'code' in ended ? ended.code : 128 + (ended.signal === 'SIGINT' ? 2 : 15);
  const stopped = await stopWithin(SERVICE_STOP_LIMIT_MS, async () => {
    await collector.stop();
    const ts = new Date().toISOString();
    const exit = newEnvelope({
      type: 'job.event',
      id: stableId(job.host, job.context.job, source.id, 'exit', ts),
      host: job.host,
      source: 'collector-job/0.1.0',
      ts,
      labels: job.labels,
      data: {
        job: job.context.job,
        kind: 'exit',
        exit_code: code,
        message: `${command.slice(0, 200)} exited with status ${code}`,
        ...(job.context.rank !== undefined ? { rank: job.context.rank } : {}),
        ...(job.context.gpu !== undefined ? { gpu: job.context.gpu } : {}),
        ...(source.dropped > 0 ? { fields: { lines_dropped: source.dropped } } : {}),
      },
    });
    await infra.bus
      .publish(TOPICS.jobEvents, [envelopeMessage(exit)])
      .catch((error: unknown) => log.error({ error: String(error) }, 'job_events_publish_failed'));
    await infra.close();
  });
  if (!stopped) log.error({ deadline_ms: SERVICE_STOP_LIMIT_MS }, 'collector_job_stop_timed_out');
  exitAfterStop(stopped ? code : EXIT.failed);
  return stopped ? code : EXIT.failed;
}
