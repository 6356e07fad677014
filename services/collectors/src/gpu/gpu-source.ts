import { chooseQueryFields, parseDcgmText, QUERY_FIELDS, supportedQueryFields } from '@gpualert/gpu-metrics';
import type { GpuSampleData } from '@gpualert/schema';
import { runCommand } from '../run-command.ts';
import { attributeGpus, computeAppPids } from './attribute-gpus.ts';
import { ProcessAttributor, type AttributionOptions } from './process-attribution.ts';
import { readScrape } from './scrape-to-sample.ts';

/** Where GPU metrics come from: one scrape → one sample. */
export interface GpuSource {
  readonly name: string;
  scrape(): Promise<GpuSampleData>;
  /** What scrapes printed that could not be read, each said once: the notes new since the last call. */
  takeNotes?(): string[];
}

/** Notes a source says once each: at most this many distinct over its life (a `[GPU requires reset]` per field and GPU is a few dozen). */
export const MAX_SAID_NOTES = 1_000;

export interface NvidiaSmiSourceOptions {
  readonly binary: string;
  readonly timeoutMs: number;
  /** Where each GPU's compute processes' jobs are read (default: this host's `/`); `false` reads none. */
  readonly attribution?: AttributionOptions | false;
}

/**
 * nvidia-smi: asks the driver once which fields it supports (an unknown field fails the whole
 * query), then queries those each scrape, plus the compute apps for the process count.
 */
export async function nvidiaSmiSource(options: NvidiaSmiSourceOptions): Promise<GpuSource & { readonly fields: readonly string[] }> {
  const help = await runCommand(options.binary, ['--help-query-gpu'], options.timeoutMs);
  const supported = supportedQueryFields(help.stdout);
  // When the driver cannot tell (a hung nvidia-smi at start), ask for the fields every driver has.
  const fields = supported.size > 0 ? chooseQueryFields(supported) : QUERY_FIELDS.flatMap((f) => (f.length === 1 && f[0] !== 'temperature.memory' ? f : []));
  const query = [`--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'];
  const attributor = options.attribution === false ? undefined : new ProcessAttributor(options.attribution ?? { root: '/' });
  const said = new Set<string>();
  let fresh: string[] = [];
  return {
    name: 'nvidia-smi',
    fields,
    takeNotes() {
      const notes = fresh;
      fresh = [];
      return notes;
    },
    async scrape() {
      const result = await runCommand(options.binary, query, options.timeoutMs);
      const apps =
        result.exitCode === 0 ? await runCommand(options.binary, ['--query-compute-apps=gpu_uuid,pid', '--format=csv,noheader'], options.timeoutMs) : undefined;
      const { sample, unread } = readScrape(result, fields, apps);
      for (const note of unread) {
        if (said.has(note) || said.size >= MAX_SAID_NOTES) continue;
        said.add(note);
        fresh.push(note);
      }
      if (!attributor || !apps || apps.exitCode !== 0 || sample.gpus.length === 0) return sample;
      return { ...sample, gpus: await attributeGpus(sample.gpus, computeAppPids(apps.stdout), attributor) };
    },
  };
}

/** A DCGM exporter's /metrics. */
export function dcgmSource(url: string, host: string, timeoutMs: number): GpuSource {
  return {
    name: 'dcgm',
    async scrape() {
      let text: string;
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
        if (!response.ok) return { gpus: [], error: { code: 'unreachable', message: `${url} answered ${response.status}` } };
        text = await response.text();
      } catch (error) {
        const timedOut = error instanceof Error && error.name === 'TimeoutError';
        return {
          gpus: [],
          error: { code: timedOut ? 'timeout' : 'unreachable', message: `${url}: ${error instanceof Error ? error.message : String(error)}` },
        };
      }
      const parsed = parseDcgmText(text, host);
      const gpus = parsed.hosts.get(host) ?? [];
      return gpus.length > 0 ? { gpus } : { gpus, error: { code: 'unparseable', message: `${url} exposed no DCGM_FI_ series with a gpu label` } };
    },
  };
}
