import { existsSync } from 'node:fs';
import { open, writeFile } from 'node:fs/promises';
import { MemoryBus, type Bus } from '@gpualert/bus';
import { embeddedDataDir } from '@gpualert/runtime';
import { exportEvidence, type GpuSelector } from '@gpualert/timeline';
import { CliError, EXIT, errnoCode, errorMessage } from '../cli-error.ts';
import { parseDuration } from '../duration.ts';
import { ALL_SETTINGS } from '../settings/all-settings.ts';
import { loadSettings, resolveSettings } from '../settings/command-settings.ts';
import { READER_SETTINGS } from '../settings/common-settings.ts';

type Options = Record<string, unknown>;

/** `--since` when not given, and the most it may be: a week of a host's samples reads in seconds, a month is the bound. */
const DEFAULT_SINCE_MS = 7 * 86_400_000;
const MAX_SINCE_MS = 30 * 86_400_000;
/** A host name as the archive may name it: DNS-like, no path separator, no `..`. */
const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
const GPU_UUID = /^GPU-[0-9A-Fa-f-]{8,64}$/;
/** The routes file is read only for the URLs to keep out of the archive: bounded. */
const MAX_ROUTES_BYTES = 4 * 1024 * 1024;

/** The flags every command shares (common-options.ts) that can carry a secret or say where the config file is. */
const COMMON_FLAGS = ['config', 'kafkaBrokers', 'redisUrl', 'topicPrefix', 'keyPrefix'] as const;

const shown = (value: string) => JSON.stringify(value.slice(0, 80));

function host(value: unknown): string {
  const text = String(value);
  if (!HOST_NAME.test(text) || text.includes('..'))
    throw new CliError(
      `gpualert evidence: HOST must be a host name of letters, digits, '.', '-' and '_', at most 253 characters, without '..' (got ${shown(text)})`,
    );
  return text;
}

function gpu(value: unknown): GpuSelector | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (/^\d{1,3}$/.test(text) && Number(text) <= 255) return { index: Number(text) };
  if (GPU_UUID.test(text)) return { uuid: text };
  throw new CliError(`gpualert evidence: --gpu expects a GPU index 0-255 or a UUID like GPU-8c4f…  (got ${shown(text)})`);
}

/** `--since`: a duration back from `--until` (7d, 72h) or an ISO-8601 time. */
function window(options: Options, now: number): { from: number; to: number } {
  const to = options.until === undefined ? now : Date.parse(String(options.until));
  if (Number.isNaN(to))
    throw new CliError(`gpualert evidence: --until expects an ISO-8601 time like 2026-06-01T02:00:00Z (got ${shown(String(options.until))})`);
  const since = options.since === undefined ? undefined : String(options.since);
  const from = since === undefined ? to - DEFAULT_SINCE_MS : /^\d{4}-\d\d-\d\d/.test(since) ? Date.parse(since) : to - parseDuration('since', since);
  if (Number.isNaN(from)) throw new CliError(`gpualert evidence: --since expects a duration like 72h or 7d, or an ISO-8601 time (got ${shown(String(since))})`);
  if (from >= to) throw new CliError('gpualert evidence: --since must be before --until');
  if (to - from > MAX_SINCE_MS) throw new CliError(`gpualert evidence: the window is at most 30 days (--since ${String(since)} is longer)`);
  return { from, to };
}

/**
 * Every value a setting marked secret holds here, for any command (the notifier's token, the
 * brokers, Redis' URL…), and every URL of the routes file (webhooks carry their secret in the
 * URL): none of them may reach the archive. A command whose settings do not load here adds none.
 */
async function secretsHere(options: Options): Promise<string[]> {
  const secrets = new Set<string>();
  const routes = new Set<string>();
  // The common flags only: another command's setting of the same name as one of evidence's own flags must not fail its load.
  const given = Object.fromEntries(COMMON_FLAGS.filter((flag) => options[flag] !== undefined).map((flag) => [flag, options[flag]]));
  for (const settings of ALL_SETTINGS.values()) {
    let resolved: ReturnType<typeof resolveSettings>;
    try {
      resolved = resolveSettings(settings, given);
    } catch {
      continue;
    }
    const values = new Map<string, unknown>(Object.entries(resolved.config));
    for (const setting of resolved.effective) {
      const value = values.get(setting.key);
      if (setting.key === 'routes' && typeof value === 'string') routes.add(value);
      if (!setting.secret) continue;
      for (const v of Array.isArray(value) ? value : [value]) if (typeof v === 'string' && v !== '') secrets.add(v);
    }
  }
  for (const file of routes) {
    try {
      const handle = await open(file, 'r');
      try {
        const buffer = Buffer.alloc(MAX_ROUTES_BYTES);
        const { bytesRead } = await handle.read(buffer, 0, MAX_ROUTES_BYTES, 0);
        for (const url of buffer
          .subarray(0, bytesRead)
          .toString('utf8')
          .match(/\bhttps?:\/\/[^\s"'<>`]+/g) ?? [])
          secrets.add(url);
      } finally {
        await handle.close();
      }
    } catch {
      // no routes file here: nothing of it to keep out
    }
  }
  return [...secrets];
}

const compactTime = (at: number) =>
  new Date(at)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/** `gpualert evidence HOST [--gpu N|UUID] [--since 7d|TIME] [--until TIME] [--out FILE]`: one .tar.gz for a support case. */
export async function evidence(hostArgument: unknown, options: Options): Promise<number> {
  const name = host(hostArgument);
  const selector = gpu(options.gpu);
  const madeAt = Date.now();
  const { from, to } = window(options, madeAt);
  // The host is checked above; the file name takes only its plain characters, cut.
  const out =
    typeof options.out === 'string' && options.out !== ''
      ? options.out
      : `gpualert-evidence-${name.replace(/[^A-Za-z0-9.-]/g, '_').slice(0, 64)}-${compactTime(madeAt)}.tar.gz`;
  const config = loadSettings(READER_SETTINGS, options);
  let bus: Bus;
  let where: string;
  let source: 'kafka' | 'embedded';
  if (config.kafkaBrokers) {
    bus = new (await import('@gpualert/bus/kafka')).KafkaBus({ brokers: config.kafkaBrokers, topicPrefix: config.topicPrefix, publishTimeoutMs: 5_000 });
    where = 'Kafka (KAFKA_BROKERS)';
    source = 'kafka';
  } else {
    const dataDir = embeddedDataDir(config.dataDir);
    if (!existsSync(dataDir)) throw new CliError(`gpualert evidence: no KAFKA_BROKERS and no embedded log at ${dataDir} (run gpualert up, or give --data-dir)`);
    bus = new MemoryBus({ dataDir });
    where = `the embedded log at ${dataDir}`;
    source = 'embedded';
  }
  const secrets = await secretsHere(options);
  let result: Awaited<ReturnType<typeof exportEvidence>>;
  try {
    const started = Date.now();
    result = await exportEvidence(bus, { host: name, from, to, madeAt, source, secrets, ...(selector ? { gpu: selector } : {}) }, (topic) => {
      if (Date.now() - started > 1_000) process.stderr.write(`read ${topic} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
    });
  } catch (error) {
    throw new CliError(`gpualert evidence: cannot read ${where}: ${errorMessage(error)}`, EXIT.failed);
  } finally {
    await bus.close();
  }
  if (!result.ok) throw new CliError(`gpualert evidence: ${result.reason} in ${where}`);
  try {
    // A default name is new each second: never written over an archive already there.
    await writeFile(out, result.archive.bytes, { flag: options.out === undefined ? 'wx' : 'w' });
  } catch (error) {
    throw new CliError(
      `gpualert evidence: cannot write ${out}: ${errnoCode(error) === 'EEXIST' ? 'it already exists (give --out)' : errorMessage(error)}`,
      EXIT.failed,
    );
  }
  process.stdout.write(`${out}\n`);
  process.stderr.write(
    `gpualert evidence: ${result.archive.files.length} files for ${name} (${result.archive.bytes.length} bytes): ${result.archive.files.join(', ')}\n`,
  );
  return EXIT.ok;
}
