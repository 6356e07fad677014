const UNITS: ReadonlyMap<string, number> = new Map([
  ['ms', 1],
  ['s', 1_000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
]);

/** The longest duration a policy names: a year. */
export const MAX_POLICY_DURATION_MS = 366 * 86_400_000;

/** `90s`, `30m`, `1h30m`, `2d`, `0`: milliseconds, or one line saying why not. */
export function parsePolicyDuration(text: string): number | string {
  if (text === '0') return 0;
  if (text.length > 32) return `a duration is at most 32 characters (got ${text.length})`;
  const parts = /^(?:\d+(?:ms|s|m|h|d))+$/.test(text) ? text.match(/\d+(?:ms|s|m|h|d)/g) : null;
  if (!parts) return `${JSON.stringify(text)} is not a duration (such as 90s, 30m, 1h30m, 2d)`;
  let ms = 0;
  for (const part of parts) {
    const unit = /(ms|s|m|h|d)$/.exec(part)?.[1] ?? '';
    ms += Number(part.slice(0, part.length - unit.length)) * (UNITS.get(unit) ?? 0);
  }
  return ms > MAX_POLICY_DURATION_MS ? `${text} is longer than a year` : ms;
}
