import { CliError } from './cli-error.ts';

const UNITS = new Map<string, number>([
  ['ms', 1],
  ['s', 1_000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
]);

/** A unit's milliseconds; no unit is seconds. The pattern takes only the units the table has. */
export function unitMs(unit: string | undefined): number {
  const ms = UNITS.get(unit ?? 's');
  if (ms === undefined) throw new Error(`gpualert bug: no unit ${unit ?? ''} in the duration table`);
  return ms;
}

/** `500ms`, `10s`, `5m`, `2h`, `7d` (a bare number is seconds) → milliseconds; one clear line otherwise. */
export function parseDuration(option: string, value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!match) throw new CliError(`gpualert: --${option} expects a duration like 500ms, 10s, 5m, 2h or 7d (got "${value}")`);
  return Math.round(Number(match[1]) * unitMs(match[2]));
}
