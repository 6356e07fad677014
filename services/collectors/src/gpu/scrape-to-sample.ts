import { countComputeApps, lostGpuMessage, parseNvidiaSmiCsv } from '@gpualert/gpu-metrics';
import type { CollectorError, GpuSampleData } from '@gpualert/schema';
import type { CommandResult } from '../run-command.ts';

/**
 * Turns one nvidia-smi run into one sample. A hang, a failure or the lost-GPU message becomes
 * a sample whose `error` says so: the engine alerts on it, and the collector keeps scraping.
 */
export function scrapeToSample(query: CommandResult, fields: readonly string[], apps: CommandResult | undefined): GpuSampleData {
  return readScrape(query, fields, apps).sample;
}

/** One scrape's sample and what nvidia-smi printed that could not be read (`[GPU requires reset]`, `[Unknown Error]`, …). */
export function readScrape(query: CommandResult, fields: readonly string[], apps: CommandResult | undefined): { sample: GpuSampleData; unread: string[] } {
  const output = `${query.stdout}\n${query.stderr}`;
  const lost = output
    .split('\n')
    .map(lostGpuMessage)
    .find((l) => l !== undefined);
  const parsed = parseNvidiaSmiCsv(query.stdout, fields);
  const gpus = parsed.samples[0] ?? [];
  const counts = apps && apps.exitCode === 0 ? countComputeApps(apps.stdout) : undefined;
  const withApps = counts ? gpus.map((g) => ({ ...g, processes: (g.uuid && counts.get(g.uuid)) || 0 })) : gpus;
  const error = errorOf(query, lost, parsed.samples.length === 0);
  return { sample: error ? { gpus: withApps, error } : { gpus: withApps }, unread: parsed.unread.map((u) => u.what) };
}

function errorOf(query: CommandResult, lost: { pciBus: string | null } | undefined, noRows: boolean): CollectorError | undefined {
  const firstLine = (text: string) =>
    text
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? '';
  if (query.timedOut) return { code: 'timeout', message: 'nvidia-smi did not answer in time (a GPU or the driver may be hung)' };
  if (lost) {
    const message = firstLine(query.stdout.includes('Unable') || query.stdout.includes('fallen') ? query.stdout : query.stderr);
    return { code: 'gpu_lost', message, ...(lost.pciBus ? { pci_bus: lost.pciBus } : {}), ...(query.exitCode !== null ? { exit_code: query.exitCode } : {}) };
  }
  if (query.spawnError) return { code: 'command_failed', message: `cannot run nvidia-smi: ${query.spawnError}` };
  if (query.exitCode !== 0) {
    return {
      code: 'command_failed',
      message: firstLine(query.stderr) || firstLine(query.stdout) || 'nvidia-smi failed',
      ...(query.exitCode !== null ? { exit_code: query.exitCode } : {}),
    };
  }
  if (noRows) return { code: 'unparseable', message: `nvidia-smi printed no data rows: ${firstLine(query.stdout).slice(0, 200)}` };
  return undefined;
}
