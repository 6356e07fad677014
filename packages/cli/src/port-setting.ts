import { ConfigError } from '@gpualert/config';

/**
 * A port setting from its flag, else its environment variable, else its default: 0 to 65535 (0
 * picks a free one), or one `GA-CONFIG-INVALID` line naming the setting and where it came from.
 * A port is never a secret: the value is shown.
 */
export function portSetting(command: string, flag: { name: string; value: unknown }, variable: string, fallback: number, env: Readonly<Record<string, string | undefined>> = process.env): number {
  const fromFlag = flag.value !== undefined;
  const given = fromFlag ? flag.value : env[variable];
  if (given === undefined || given === '') return fallback;
  const text = String(given);
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(port) || port > 65_535) {
    const where = fromFlag ? `${flag.name} (flag)` : `${variable} (environment)`;
    throw new ConfigError(`invalid config: ${where}: expected a port 0-65535 for gpualert ${command} (got ${JSON.stringify(text.slice(0, 40))})`);
  }
  return port;
}
