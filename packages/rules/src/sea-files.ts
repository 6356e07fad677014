import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { getAsset } from 'node:sea';

/** The asset of gpualert's single executable that lists the others: the paths, from the package root, of the files it carries (tools/build-sea.ts). */
export const SEA_FILE_LIST = 'gpualert-files.json';
/** Files one executable carries at most (rules/ has a few dozen). */
const MAX_FILES = 1_000;

/**
 * The files gpualert reads by path (rules/: the Xid catalog, the bundled rules), written from the
 * single executable's assets to a private folder (0700, under TMPDIR: the unit's PrivateTmp)
 * that is removed when the process exits. A few dozen small files: about a millisecond.
 */
export function unpackSeaFiles(): string {
  const list: unknown = JSON.parse(getAsset(SEA_FILE_LIST, 'utf8'));
  if (!Array.isArray(list) || list.length > MAX_FILES) throw new Error(`gpualert: the executable's ${SEA_FILE_LIST} is not a list of at most ${MAX_FILES} files`);
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const file of list) {
    if (typeof file !== 'string' || file.startsWith('/') || file.split('/').includes('..')) {
      throw new Error(`gpualert: the executable carries a file it cannot place: ${JSON.stringify(file)}`);
    }
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), new Uint8Array(getAsset(file)));
  }
  return dir;
}
