import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where the embedded mode keeps its log: the `dataDir` setting (`--data-dir`, GPUALERT_DATA_DIR),
 * else `$XDG_DATA_HOME/gpualert` (by default `~/.local/share/gpualert`), the desktop's convention.
 */
export function embeddedDataDir(setting: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (setting !== undefined && setting !== '') return setting;
  return join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'gpualert');
}
