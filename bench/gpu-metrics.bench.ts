import { parseDcgmText, parseNvidiaSmiCsv } from '@gpualert/gpu-metrics';
import { readFileSync } from 'node:fs';
import { measure } from './harness.ts';

export async function benchGpuMetrics(): Promise<void> {
  console.log('\n## GPU metric parsers');
  const subset = readFileSync(new URL('../test/fixtures/nvidia-smi/query-subset.csv', import.meta.url), 'utf8').split('\n');
  const header = subset[0]!;
  const row = subset[2]!;
  // One 8-GPU scrape with units, as the full query prints it.
  const scrape = [header, ...Array.from({ length: 8 }, (_, i) => row.replace(/^0, /, `${i}, `))].join('\n');
  await measure('nvidia-smi CSV, 8-GPU scrape (26 fields)', 'GPU rows/s', 7, () => {
    for (let i = 0; i < 5_000; i += 1) parseNvidiaSmiCsv(scrape);
    return 5_000 * 8;
  });
  const prom = readFileSync(new URL('../test/fixtures/dcgm/exporter.prom', import.meta.url), 'utf8');
  const lines = prom.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
  await measure('DCGM exporter text', 'lines/s', 7, () => {
    for (let i = 0; i < 2_000; i += 1) parseDcgmText(prom);
    return 2_000 * lines;
  });
}
