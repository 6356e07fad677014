import type { GpuMetrics } from '@gpualert/schema';
import { DCGM_HOST_LABELS, DcgmSeriesAccumulator, hostOfSeries } from './dcgm-series.ts';

const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?\s*$/;
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export interface DcgmParse {
  /** GPUs per host, from the `Hostname`/`hostname` label or the host given. */
  readonly hosts: Map<string, GpuMetrics[]>;
  readonly problems: { readonly line: number; readonly text: string }[];
}

/**
 * Parses a DCGM exporter's Prometheus text. Accepts the old `Hostname` and the new `hostname`
 * label; DCGM's blank sentinels become null. `host` overrides the label (the exporter's label
 * is often a pod name, not the machine).
 */
export function parseDcgmText(text: string, host?: string): DcgmParse {
  const series = new DcgmSeriesAccumulator();
  const problems: { line: number; text: string }[] = [];
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) {
      problems.push({ line: i + 1, text: line });
      continue;
    }
    const [, name, labelText, rawValue] = match;
    if (name === undefined || !name.startsWith('DCGM_FI_')) continue;
    // Label names are the exporter's words: a Map, so `__proto__="x"` is only data.
    const labels = new Map<string, string>();
    for (const [, key, value] of (labelText ?? '').matchAll(LABEL)) if (key !== undefined && value !== undefined) labels.set(key, value);
    if (!series.add(host ?? hostOfSeries(labels, DCGM_HOST_LABELS, 'unknown'), name, labels, Number(rawValue))) problems.push({ line: i + 1, text: line });
  }
  return { hosts: series.result(), problems };
}
