/** One file of an archive: a name we chose (never one taken from input) and its bytes. */
export interface ArchiveFile {
  readonly name: string;
  readonly content: string | Buffer;
}

const BLOCK = 512;
/** ustar's size field is 11 octal digits: 8 GiB less a byte. */
const MAX_ENTRY_BYTES = 8 * 1024 ** 3 - 1;
/** Names we write: short, plain ASCII, no `..`, no leading `/`, so an unpacker puts each where it says. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*\/?$/;

function octal(value: number, width: number): string {
  // width - 1 digits and a NUL, as GNU and BSD tar write them
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(name: string, size: number, mtimeSeconds: number, type: '0' | '5'): Buffer {
  if (!SAFE_NAME.test(name) || name.length > 100 || name.split('/').includes('..'))
    throw new Error(`gpualert bug: tar entry name ${JSON.stringify(name)} is not one of ours`);
  if (size > MAX_ENTRY_BYTES) throw new Error(`gpualert bug: tar entry ${name} is ${size} bytes, over ustar's 8 GiB`);
  const h = Buffer.alloc(BLOCK, 0);
  h.write(name, 0, 100, 'ascii');
  h.write(octal(type === '5' ? 0o755 : 0o644, 8), 100, 8, 'ascii');
  h.write(octal(0, 8), 108, 8, 'ascii'); // uid
  h.write(octal(0, 8), 116, 8, 'ascii'); // gid
  h.write(octal(size, 12), 124, 12, 'ascii');
  h.write(octal(Math.max(0, Math.floor(mtimeSeconds)), 12), 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii'); // the checksum counts its own field as spaces
  h.write(type, 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write('gpualert', 265, 32, 'ascii'); // uname
  h.write('gpualert', 297, 32, 'ascii'); // gname
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return h;
}

/**
 * A POSIX ustar archive of one folder and its files, in the order given: what `tar -xf` unpacks
 * on any system. Pure; the caller compresses and writes it.
 */
export function ustar(folder: string, files: readonly ArchiveFile[], mtime: number): Buffer {
  const seconds = mtime / 1000;
  const parts: Buffer[] = [header(`${folder}/`, 0, seconds, '5')];
  for (const file of files) {
    const bytes = typeof file.content === 'string' ? Buffer.from(file.content, 'utf8') : file.content;
    parts.push(header(`${folder}/${file.name}`, bytes.length, seconds, '0'), bytes);
    const pad = (BLOCK - (bytes.length % BLOCK)) % BLOCK;
    if (pad > 0) parts.push(Buffer.alloc(pad, 0));
  }
  parts.push(Buffer.alloc(BLOCK * 2, 0)); // two empty blocks end the archive
  return Buffer.concat(parts);
}
