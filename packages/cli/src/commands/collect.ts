import { readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { hostname } from 'node:os';
import {
  CommandLineSource,
  dcgmSource,
  FileLineSource,
  KmsgLineSource,
  nvidiaSmiSource,
  runCommand,
  startGpuCollector,
  startInventoryCollector,
  startKernelCollector,
  type LineSource,
  type MetadataProvider,
} from '@gpualert/collectors';
import { parseTopology, type PciTopology } from '@gpualert/kernel-log';
import { canonicalPciBus } from '@gpualert/schema';
import { loadXidCatalog } from '@gpualert/rules';
import { CliError, errnoCode } from '../cli-error.ts';
import { parseDuration } from '../duration.ts';
import { runService } from '../run-service.ts';
import { commonConfig } from '../common-options.ts';
import { stringOption, stringListOption } from '../option-values.ts';
import { firstRuleError } from './rule-error.ts';

type Options = Record<string, unknown>;

function labelsOf(options: Options): Record<string, string> {
  // A label key is data: `--label __proto__=x` must not reach a prototype.
  const labels = Object.create(null) as Record<string, string>;
  for (const pair of stringListOption(options, 'label') ?? []) {
    const [key, ...rest] = pair.split('=');
    if (!key || rest.length === 0) throw new CliError(`gpualert collect: --label expects key=value (got "${pair}")`);
    labels[key] = rest.join('=');
  }
  return labels;
}

export async function collectGpu(options: Options): Promise<number> {
  const intervalMs = parseDuration('interval', String(options.interval));
  const timeoutMs = parseDuration('timeout', String(options.timeout));
  const host = stringOption(options, 'host') ?? hostname();
  const labels = labelsOf(options);
  if (options.source !== 'nvidia-smi' && options.source !== 'dcgm') {
    throw new CliError(`gpualert collect gpu: --source must be nvidia-smi or dcgm (got "${String(options.source)}")`);
  }
  if (options.source === 'dcgm' && !options.url) throw new CliError("gpualert collect gpu: --source dcgm needs --url of the exporter's /metrics");
  return runService('collector-gpu', commonConfig(options), async ({ bus }, log) => {
    const source =
      options.source === 'dcgm'
        ? dcgmSource(String(options.url), host, timeoutMs)
        : await nvidiaSmiSource({ binary: String(options.nvidiaSmi), timeoutMs, ...attributionOf(options) });
    log.info({ source: source.name, host, interval_ms: intervalMs }, 'gpu_collector_started');
    return startGpuCollector({ bus, source, host, labels, intervalMs, log });
  });
}

/**
 * `--proc-root DIR` (where `/proc` and `/etc/passwd` are read: a container that mounts the host's
 * under another path) and `--pods-file FILE` (the kubelet's pods as JSON: namespace and pod
 * names) for attributing each GPU's processes to a job, and `--slurm-jobs FILE` (a saved `squeue`,
 * `sacct` or `scontrol show job`: the user and name of a job its cgroup names only by id); without
 * any, `/` and neither file.
 */
export function attributionOf(options: Options): { attribution?: { root: string; podsFile?: string; slurmJobsFile?: string } } {
  const root = stringOption(options, 'procRoot');
  const podsFile = stringOption(options, 'podsFile');
  const slurmJobsFile = stringOption(options, 'slurmJobs');
  if (root === undefined && podsFile === undefined && slurmJobsFile === undefined) return {};
  return {
    attribution: { root: root ?? '/', ...(podsFile !== undefined ? { podsFile } : {}), ...(slurmJobsFile !== undefined ? { slurmJobsFile } : {}) },
  };
}

export async function gpuIndexByPci(nvidiaSmi: string): Promise<Map<string, number>> {
  const result = await runCommand(nvidiaSmi, ['--query-gpu=index,pci.bus_id', '--format=csv,noheader'], 5_000);
  const map = new Map<string, number>();
  for (const line of result.stdout.split('\n')) {
    const [index, bus] = line.split(',').map((c) => c.trim());
    const pci = bus ? canonicalPciBus(bus) : null;
    if (pci && index && /^\d+$/.test(index)) map.set(pci, Number(index));
  }
  return map;
}

export async function chooseSource(options: Options): Promise<LineSource> {
  const source = stringOption(options, 'source') ?? (options.file ? 'file' : undefined);
  switch (source) {
    case 'file':
      if (!options.file) throw new CliError('gpualert collect kernel: --source file needs --file PATH');
      return new FileLineSource(String(options.file));
    case 'kmsg':
      return new KmsgLineSource();
    case 'journal':
      return new CommandLineSource('journalctl', ['-k', '-f', '-n', '0', '-o', 'short-iso']);
    case 'dmesg':
      return new CommandLineSource('dmesg', ['-w', '--time-format', 'iso']);
    case undefined:
      try {
        // Open it, not just access(): in a container the permission bits say yes and open says EPERM.
        await (await open('/dev/kmsg', 'r')).close();
        return new KmsgLineSource();
      } catch {
        return new CommandLineSource('journalctl', ['-k', '-f', '-n', '0', '-o', 'short-iso']);
      }
    default:
      throw new CliError(`gpualert collect kernel: --source must be kmsg, journal, dmesg or file (got "${source}")`);
  }
}

export function bootTimeMs(): number | undefined {
  try {
    return Date.now() - Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;
  } catch {
    return undefined;
  }
}

/** `collect kernel --topology FILE`: the host's PCI tree (lspci -tvnn, sysfs links or the inventory's JSON), read once at start. */
export function kernelTopology(file: string): PciTopology {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`gpualert collect kernel: --topology ${file}: ${errnoCode(error) ?? String(error)}`);
  }
  const parsed = parseTopology(text);
  if (!parsed.ok) throw new CliError(`gpualert collect kernel: --topology ${file}: ${parsed.error}`);
  return parsed.value;
}

export async function collectKernel(options: Options): Promise<number> {
  const host = stringOption(options, 'host') ?? hostname();
  const labels = labelsOf(options);
  const catalog = loadXidCatalog(stringOption(options, 'catalog'));
  if (!catalog.ok) throw new CliError(`gpualert collect kernel: ${firstRuleError(catalog.errors)}`);
  const source = await chooseSource(options);
  const topology = options.topology ? kernelTopology(String(options.topology)) : undefined;
  return runService('collector-kernel', commonConfig(options), async ({ bus, store }, log) => {
    const gpus = await gpuIndexByPci(String(options.nvidiaSmi));
    const boot = bootTimeMs();
    return startKernelCollector({
      bus,
      store,
      source,
      host,
      labels,
      catalog: catalog.value,
      gpuIndexByPci: gpus,
      log,
      ...(boot !== undefined ? { bootTimeMs: boot } : {}),
      ...(topology ? { topology } : {}),
    });
  });
}

export async function collectInventory(options: Options): Promise<number> {
  const host = stringOption(options, 'host') ?? hostname();
  const labels = labelsOf(options);
  const metadata = String(options.metadata);
  const providers: MetadataProvider[] = metadata === 'auto' ? ['aws', 'gcp', 'azure'] : metadata === 'none' ? [] : [metadata as MetadataProvider];
  if (!['auto', 'none', 'aws', 'gcp', 'azure'].includes(metadata)) {
    throw new CliError(`gpualert collect inventory: --metadata must be auto, none, aws, gcp or azure (got "${metadata}")`);
  }
  return runService('collector-inventory', commonConfig(options), async ({ bus }, log) =>
    startInventoryCollector({
      bus,
      host,
      labels,
      log,
      nvidiaSmi: String(options.nvidiaSmi),
      timeoutMs: parseDuration('timeout', String(options.timeout)),
      intervalMs: parseDuration('interval', String(options.interval)),
      metadata: providers,
      ...(options.metadataEndpoint ? { metadataEndpoint: String(options.metadataEndpoint) } : {}),
    }),
  );
}
