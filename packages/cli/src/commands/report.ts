import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { gunzipSync } from 'node:zlib';
import { MemoryBus, type Bus } from '@gpualert/bus';
import type { RuleSet } from '@gpualert/engine';
import { bundledPath } from '@gpualert/rules';
import { embeddedDataDir, type ServiceDefinition } from '@gpualert/runtime';
import { TOPICS, validateEnvelope } from '@gpualert/schema';
import {
  AlertBook,
  BILL_FORMATS,
  DEFAULT_BUSY_THRESHOLD_PCT,
  GROUP_BY,
  NO_PRICES,
  parseBill,
  readRollup,
  reconcile,
  renderUsage,
  startUsageService,
  USAGE_FORMATS,
  UsageReportBuilder,
  usageService,
} from '@gpualert/usage';
import { CliError, EXIT, errnoCode, errorMessage } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { READER_SETTINGS } from '../settings/common-settings.ts';
import { runService } from '../run-service.ts';
import { loadJudgement, loadPrices } from './load-files.ts';
import { stringOption, oneOf } from '../option-values.ts';

type Options = Record<string, unknown>;

/** The largest bill read: a month of hourly CUR rows for a large fleet, uncompressed. */
export const MAX_BILL_BYTES = 256 * 1024 * 1024;
/** Lines of a rollup file longer than this are refused one by one (a rollup is under 2 KB). */
const MAX_ROLLUP_LINE = 64 * 1024;
/** Refused lines named on standard error; the rest are counted. */
const MAX_LINE_ERRORS = 20;

function time(option: string, value: unknown): number {
  const at = Date.parse(String(value));
  if (Number.isNaN(at)) throw new CliError(`gpualert report usage: --${option} expects an ISO-8601 time like 2026-06-01T00:00:00Z (got "${String(value)}")`);
  return at;
}

/** The idle-cost rule's `util_below`: busy is at or above it. */
export function busyThreshold(ruleSet: RuleSet): number {
  for (const t of ruleSet.templates) for (const rule of t.rules) if (rule.kind === 'idle_cost') return rule.util_below;
  return DEFAULT_BUSY_THRESHOLD_PCT;
}

/** The usage rollups in `gpualert up`: the rules' busy threshold and the bundled prices for the digest. */
export function usageServiceFor(ruleSet: RuleSet, clock: 'wall' | 'event'): ServiceDefinition {
  const file = bundledPath('rules/prices.yaml');
  const prices = existsSync(file) ? loadPrices(file, 'up') : NO_PRICES;
  return usageService({ clock, busyThresholdPct: busyThreshold(ruleSet), prices });
}

/** `gpualert usage`: the rollups as a service of their own. */
export async function usage(options: Options): Promise<number> {
  const clock = String(options.clock ?? 'wall');
  if (clock !== 'wall' && clock !== 'event') throw new CliError(`gpualert usage: --clock must be wall or event (got "${clock}")`);
  const { ruleSet } = loadJudgement(stringOption(options, 'rules'), 'usage');
  const prices = loadPrices(stringOption(options, 'prices') ?? bundledPath('rules/prices.yaml'), 'usage');
  return runService('usage', commonConfig(options), async ({ bus }, log) => {
    const service = await startUsageService({ bus, log, clock, busyThresholdPct: busyThreshold(ruleSet), prices });
    log.info({ clock, busy_threshold_pct: busyThreshold(ruleSet) }, 'usage_started');
    return service;
  });
}

/**
 * `gpualert report usage --from T --to T [--by …] [--prices FILE] [--format …] [--input FILE]
 * [--bill FILE --bill-format …]`: GPU-hours and cost per group from the rollups (a recording, or
 * `gpualert.usage` on Kafka or in the embedded log), and the bill against them.
 */
export async function reportUsage(options: Options): Promise<number> {
  const from = time('from', options.from);
  const to = time('to', options.to);
  if (from >= to) throw new CliError('gpualert report usage: --from must be before --to');
  const by = String(options.by ?? 'host');
  if (!oneOf(GROUP_BY, by)) throw new CliError(`gpualert report usage: --by must be one of ${GROUP_BY.join(', ')} (got "${by}")`);
  const format = String(options.format ?? 'md');
  if (!oneOf(USAGE_FORMATS, format)) throw new CliError(`gpualert report usage: --format must be one of ${USAGE_FORMATS.join(', ')} (got "${format}")`);
  const billFormat = options.bill ? String(options.billFormat ?? '') : undefined;
  if (billFormat !== undefined && !oneOf(BILL_FORMATS, billFormat))
    throw new CliError(`gpualert report usage: --bill needs --bill-format, one of ${BILL_FORMATS.join(', ')}`);
  const prices = options.prices ? loadPrices(String(options.prices), 'report usage') : NO_PRICES;
  const builder = new UsageReportBuilder({ from, to, by }, prices, options.bill !== undefined);
  // With a bill, the alerts read alongside the rollups explain the broken hours (summary, times, kernel events).
  const book = options.bill !== undefined ? new AlertBook() : undefined;

  let refused = 0;
  const refuse = (where: string, reason: string) => {
    refused += 1;
    if (refused <= MAX_LINE_ERRORS) process.stderr.write(`gpualert report usage: ${where}: ${reason}\n`);
  };
  const take = (text: string, where: string) => {
    if (text.trim() === '') return;
    if (text.length > MAX_ROLLUP_LINE) return refuse(where, `a line of ${text.length} characters (at most ${MAX_ROLLUP_LINE})`);
    const read = readRollup(text);
    if (read.ok === true) builder.add(read.rollup);
    else if (read.ok === false) refuse(where, read.reason);
    else if (book && read.type === 'alert') {
      const alert = validateEnvelope(read.json);
      if (alert.ok && alert.value.type === 'alert') book.add(alert.value);
    }
  };

  if (options.input) {
    const file = String(options.input);
    if (!existsSync(file)) throw new CliError(`gpualert report usage: cannot read ${file}: ENOENT`);
    const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
    let n = 0;
    for await (const line of lines) take(line, `${file}:${++n}`);
  } else {
    await readBus(options, (text, where) => take(text, where), from, to, book !== undefined);
  }
  if (refused > MAX_LINE_ERRORS) process.stderr.write(`gpualert report usage: ${refused} lines refused in all\n`);

  const report = builder.build();
  let reconciliation;
  if (options.bill && billFormat) {
    const file = String(options.bill);
    let bytes: Buffer;
    try {
      if (statSync(file).size > MAX_BILL_BYTES) throw new CliError(`gpualert report usage: ${file} is over ${MAX_BILL_BYTES} bytes; export a shorter period`);
      bytes = readFileSync(file);
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError(`gpualert report usage: cannot read ${file}: ${errnoCode(error) ?? String(error)}`);
    }
    const text = billText(file, bytes);
    const bill = parseBill(billFormat, text, file);
    for (const e of bill.errors.slice(0, MAX_LINE_ERRORS)) process.stderr.write(`gpualert report usage: ${file}:${e.line}: ${e.message}\n`);
    if (bill.lines.length === 0 && bill.error_count > 0)
      throw new CliError(`gpualert report usage: ${file}: no usable ${billFormat} rows (${bill.error_count} refused)`);
    reconciliation = reconcile(bill, builder.hostHours, { from, to }, book);
  }
  const text = renderUsage(report, reconciliation, format);
  if (options.out) await writeFile(String(options.out), text);
  else process.stdout.write(text);
  if (report.duplicates > 0)
    process.stderr.write(
      `gpualert report usage: ${report.duplicates} rollups of a GPU-hour already counted were ignored (the first read of each GPU-hour counts)\n`,
    );
  if (report.rollups === 0) process.stderr.write('gpualert report usage: no usage rollups in this range\n');
  return EXIT.ok;
}

/** A bill's text: CUR 2.0 is delivered gzip-compressed. A gzip file that is cut short, damaged or unpacks past the bound is the input's fault (exit 2), named. */
export function billText(file: string, bytes: Buffer): string {
  if (!(bytes[0] === 0x1f && bytes[1] === 0x8b)) return bytes.toString('utf8');
  try {
    return gunzipSync(bytes, { maxOutputLength: MAX_BILL_BYTES }).toString('utf8');
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ERR_BUFFER_TOO_LARGE')
      throw new CliError(`gpualert report usage: ${file}: unpacks to more than ${MAX_BILL_BYTES} bytes; export a shorter period`);
    throw new CliError(
      `gpualert report usage: ${file}: not a complete gzip file (${code ?? 'error'}: ${error instanceof Error ? error.message : String(error)}); download it again`,
    );
  }
}

/** `gpualert.usage` by time, from Kafka or the embedded log, message by message. */
async function readBus(options: Options, take: (text: string, where: string) => void, from: number, to: number, withAlerts: boolean): Promise<void> {
  const config = loadSettings(READER_SETTINGS, options);
  let bus: Bus;
  let where: string;
  if (config.kafkaBrokers) {
    bus = new (await import('@gpualert/bus/kafka')).KafkaBus({ brokers: config.kafkaBrokers, topicPrefix: config.topicPrefix, publishTimeoutMs: 5_000 });
    where = `Kafka at ${config.kafkaBrokers.join(',')}`;
  } else {
    const dataDir = embeddedDataDir(config.dataDir);
    if (!existsSync(dataDir))
      throw new CliError(
        `gpualert report usage: no --input, no KAFKA_BROKERS and no embedded log at ${dataDir} (run gpualert up, or give --input or --data-dir)`,
      );
    bus = new MemoryBus({ dataDir });
    where = `the embedded log at ${dataDir}`;
  }
  try {
    // A rollup is dated by its hour's start; the message by its publication an hour or so later.
    for (const topic of withAlerts ? [TOPICS.usage, TOPICS.alerts] : [TOPICS.usage]) {
      const messages = await bus.read(topic, { from, to: to + 2 * 3_600_000 });
      for (const m of messages) take(m.value.toString('utf8'), `${topic}/${m.partition}@${m.offset}`);
    }
  } catch (error) {
    throw new CliError(`gpualert report usage: cannot read ${where}: ${errorMessage(error)}`, EXIT.failed);
  } finally {
    await bus.close();
  }
}
