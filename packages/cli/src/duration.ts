import { CliError } from './cli-error.ts';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `500ms`, `10s`, `5m`, `2h` (a bare number is seconds) → milliseconds; one clear line otherwise. */
export function parseDuration(option: string, value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!match) throw new CliError(`gpualert: --${option} expects a duration like 500ms, 10s or 5m (got "${value}")`);
  return Math.round(Number(match[1]) * UNITS[match[2] ?? 's']!);
}
