import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where the embedded mode keeps its log: `--data-dir`, else GPUALERT_DATA_DIR, else
 * `$XDG_DATA_HOME/gpualert` (by default `~/.local/share/gpualert`).
 */
export function embeddedDataDir(flag: unknown, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (typeof flag === 'string' && flag !== '') return flag;
  if (env.GPUALERT_DATA_DIR) return env.GPUALERT_DATA_DIR;
  return join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'gpualert');
}
