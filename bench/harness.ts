import { readFileSync } from 'node:fs';

/** Runs `fn` several times and reports the median: these machines are shared and noisy. */
export async function measure(name: string, unit: string, runs: number, fn: () => Promise<number> | number): Promise<number> {
  const rates: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const started = performance.now();
    const count = await fn();
    rates.push(count / ((performance.now() - started) / 1000));
  }
  const value = median(rates);
  console.log(
    `${name.padEnd(58)} ${format(value).padStart(12)} ${unit}  (median of ${runs}; min ${format(Math.min(...rates))}, max ${format(Math.max(...rates))})`,
  );
  return value;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export function format(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(2);
}

/** A process's resident memory now (`VmRSS`), or the most it has held (`VmHWM`: what a memory limit must clear), in MB, from /proc. */
export function residentMb(pid: number | undefined, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  if (pid === undefined) return NaN;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
}
