import { hostname } from 'node:os';
import {
  countComputeApps,
  lostGpuMessage,
  nvidiaSmiShape,
  parseDcgmText,
  parseNvidiaSmiCsv,
  parseNvidiaSmiQuery,
  parseNvidiaSmiXml,
  type Unread,
} from '@gpualert/gpu-metrics';
import { parseKernelLog, parseTopology, type PciTopology } from '@gpualert/kernel-log';
import { loadXidCatalog } from '@gpualert/rules';
import { ADAPTERS } from '@gpualert/providers';
import { newEnvelope, Provider, stableId, type Envelope, type GpuSampleData } from '@gpualert/schema';
import { CliError, EXIT } from '../cli-error.ts';
import { readInput } from '../read-input.ts';
import { firstRuleError } from './load-files.ts';

const SOURCE = 'gpualert-parse/0.1.0';

export interface ParseOptions {
  readonly host?: string;
  readonly provider?: string;
  readonly fields?: string;
  readonly apps?: string;
  /** With kernel: `lspci -tvnn` output, a sysfs listing or the inventory's JSON tree. */
  readonly topology?: string;
}

/** `gpualert parse kernel|nvidia-smi|dcgm <file|->`: the collectors' parsers, offline, as JSONL. */
export async function parse(format: string, file: string, options: ParseOptions): Promise<number> {
  const host = options.host ?? hostname();
  const text = await readInput('parse', file);
  const now = Date.now();
  let envelopes: Envelope[];
  switch (format) {
    case 'kernel':
      envelopes = kernel(text, host, file, now, options.topology ? await topology(options.topology) : undefined);
      break;
    case 'nvidia-smi':
      envelopes = await nvidiaSmi(text, host, file, now, options);
      break;
    case 'dcgm':
      envelopes = dcgm(text, options.host, file, now);
      break;
    case 'provider':
      envelopes = provider(text, options.host, file, options.provider);
      break;
    default:
      throw new CliError(`gpualert parse: unknown format "${format}" (expected kernel, nvidia-smi, dcgm or provider)`);
  }
  for (const envelope of envelopes) process.stdout.write(`${JSON.stringify(envelope)}\n`);
  return EXIT.ok;
}

async function topology(file: string): Promise<PciTopology> {
  const parsed = parseTopology(await readInput('parse', file));
  if (!parsed.ok) throw new CliError(`gpualert parse kernel: --topology ${file}: ${parsed.error}`);
  return parsed.value;
}

function kernel(text: string, host: string, file: string, now: number, tree: PciTopology | undefined): Envelope[] {
  const catalog = loadXidCatalog();
  if (!catalog.ok) throw new CliError(`gpualert parse: ${firstRuleError(catalog.errors)}`, EXIT.failed);
  const { events, stats } = parseKernelLog(text, { catalog: catalog.value, ...(tree ? { topology: tree } : {}) }, now);
  process.stderr.write(`${stats.lines} lines: ${stats.events} events, ${stats.collapsed} folded into them, ${stats.dropped} not about a GPU or the host\n`);
  return events.map((event) =>
    newEnvelope({ type: 'kernel.event', id: stableId(host, file, event.position), host, source: SOURCE, ts: event.ts, data: event.data }),
  );
}

/**
 * nvidia-smi in any of its shapes (told by `nvidiaSmiShape`): `--query-gpu` CSV, `-q` text or
 * `-q -x` XML. What it could not read is said on stderr, each thing once.
 */
async function nvidiaSmi(text: string, host: string, file: string, now: number, options: ParseOptions): Promise<Envelope[]> {
  const shape = nvidiaSmiShape(text);
  const apps = options.apps ? countComputeApps(await readInput('parse', options.apps)) : undefined;
  const withApps = (gpus: GpuSampleData['gpus']): GpuSampleData => ({
    gpus: apps ? gpus.map((g) => ({ ...g, processes: (g.uuid && apps.get(g.uuid)) || 0 })) : gpus,
  });
  const samples: GpuSampleData[] = [];
  let unread: readonly Unread[] = [];
  if (shape === 'xml') {
    const parsed = parseNvidiaSmiXml(text);
    if (parsed.error !== undefined) throw new CliError(`gpualert parse: ${file}: nvidia-smi -q -x: ${parsed.error}`);
    if (parsed.gpus.length > 0) samples.push(withApps(parsed.gpus));
    unread = parsed.unread;
  } else if (shape === 'query') {
    const parsed = parseNvidiaSmiQuery(text);
    samples.push(...parsed.samples.map(withApps));
    unread = parsed.unread;
  } else {
    const parsed = parseNvidiaSmiCsv(
      text,
      options.fields?.split(',').map((f) => f.trim()),
    );
    samples.push(...parsed.samples.map(withApps));
    unread = parsed.unread;
    for (const problem of parsed.problems) {
      const lost = lostGpuMessage(problem.text);
      if (lost) {
        samples.push({ gpus: [], error: { code: 'gpu_lost', message: problem.text, ...(lost.pciBus ? { pci_bus: lost.pciBus } : {}) } });
      } else {
        const times = problem.count > 1 ? ` (${problem.count} times)` : '';
        process.stderr.write(`gpualert parse: ${file}:${problem.line}: not a data row${times}: ${problem.text.slice(0, 120)}\n`);
      }
    }
  }
  for (const note of unread) {
    const where = note.line > 0 ? `:${note.line}` : '';
    const times = note.count > 1 ? ` (${note.count} times)` : '';
    process.stderr.write(`gpualert parse: ${file}${where}: not read${times}: ${note.what.slice(0, 300)}\n`);
  }
  if (samples.length === 0) {
    throw new CliError(
      `gpualert parse: no nvidia-smi GPUs in ${file} (a --query-gpu --format=csv output with its header, or give --fields; nvidia-smi -q; or nvidia-smi -q -x)`,
    );
  }
  const ts = new Date(now).toISOString();
  return samples.map((data, i) => newEnvelope({ type: 'gpu.sample', id: stableId(host, file, i), host, source: SOURCE, ts, data }));
}

function dcgm(text: string, host: string | undefined, file: string, now: number): Envelope[] {
  const parsed = parseDcgmText(text, host);
  for (const problem of parsed.problems) {
    process.stderr.write(`gpualert parse: ${file}:${problem.line}: not a Prometheus sample: ${problem.text.slice(0, 120)}\n`);
  }
  if (parsed.hosts.size === 0) throw new CliError(`gpualert parse: no DCGM_FI_ series with a gpu label in ${file}`);
  const ts = new Date(now).toISOString();
  return [...parsed.hosts].map(([h, gpus]) => newEnvelope({ type: 'gpu.sample', id: stableId(h, file, ts), host: h, source: SOURCE, ts, data: { gpus } }));
}

function provider(text: string, host: string | undefined, file: string, name: string | undefined): Envelope[] {
  const parsedName = Provider.safeParse(name);
  if (!parsedName.success) {
    throw new CliError(`gpualert parse provider: --provider must be one of ${Provider.options.join(', ')}${name ? ` (got "${name}")` : ''}`);
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    // GCP's maintenance-event is plain text
    payload = text.trim();
    if (parsedName.data !== 'gcp') throw new CliError(`gpualert parse provider: ${file} is not JSON`);
  }
  const receivedAt = new Date().toISOString();
  const result = ADAPTERS[parsedName.data](payload, { receivedAt, ...(host ? { host } : {}) });
  if (!result.ok) {
    throw new CliError(`gpualert parse provider: ${file}: ${result.error.path === '' ? '' : `${result.error.path}: `}${result.error.message}`);
  }
  for (const warning of result.warnings ?? []) process.stderr.write(`gpualert parse provider: ${file}: warning: ${warning}\n`);
  return result.events.map((data) =>
    newEnvelope({
      type: 'provider.event',
      id: stableId(data.provider, data.event_id, data.status),
      host: host ?? data.hosts[0] ?? 'unknown',
      source: SOURCE,
      ts: receivedAt,
      data,
    }),
  );
}
