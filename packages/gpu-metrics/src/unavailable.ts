/**
 * nvidia-smi's and DCGM's ways of saying "no value": `[N/A]`, `N/A`, `[Not Supported]`,
 * `[Unknown Error]`, `[Requested functionality has been deprecated]`, … become null, never 0.
 */
export function isUnavailable(cell: string): boolean {
  return cell === '' || cell === 'N/A' || cell.charCodeAt(0) === 91 /* [ */ || cell === 'Unknown Error';
}

/** DCGM's blank sentinels (int32, int64 and fp64 "blank" values) mean no value. */
export function isDcgmBlank(value: number): boolean {
  return !Number.isFinite(value) || (value >= 2147483632 && value <= 2147483647) || value >= 140737488355328;
}
