/** A positive integer from the environment, or the fallback; anything else stops with one line naming the variable. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`${name}=${JSON.stringify(raw)}: expected a positive whole number`);
  return value;
}
