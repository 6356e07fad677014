import { open, stat, type FileHandle } from 'node:fs/promises';
import type { LineSource, SourceLine } from './line-source.ts';

/**
 * Follows a log file like `tail -F`: reads what was appended since the last call, keeps a
 * partial last line until its newline arrives, and starts over when the file is replaced or
 * truncated. Positions are byte offsets.
 */
export class FileLineSource implements LineSource {
  readonly id: string;
  private readonly path: string;
  private handle: FileHandle | undefined;
  private inode: number | undefined;
  private offset = 0;
  private partial = Buffer.alloc(0);

  constructor(path: string) {
    this.path = path;
    this.id = `file:${path}`;
  }

  open(from: number | undefined): void {
    this.offset = from ?? 0;
  }

  async read(): Promise<SourceLine[]> {
    let info;
    try {
      info = await stat(this.path);
    } catch {
      return []; // not there (yet, or during rotation)
    }
    if (this.inode !== undefined && info.ino !== this.inode) {
      await this.reopen(0); // replaced by rotation: the new file starts at 0
    } else if (info.size < this.offset + this.partial.length) {
      await this.reopen(0); // truncated
    }
    if (!this.handle) await this.reopen(this.offset);
    const start = this.offset + this.partial.length;
    const length = info.size - start;
    if (length <= 0) return [];
    const buffer = Buffer.alloc(Math.min(length, 4 * 1024 * 1024));
    const { bytesRead } = await this.handle!.read(buffer, 0, buffer.length, start);
    const data = Buffer.concat([this.partial, buffer.subarray(0, bytesRead)]);
    const lines: SourceLine[] = [];
    let lineStart = 0;
    for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, lineStart)) {
      const text = data.subarray(lineStart, i).toString('utf8').replace(/\r$/, '');
      lines.push({ text, position: this.offset + lineStart, next: this.offset + i + 1 });
      lineStart = i + 1;
    }
    this.offset += lineStart;
    this.partial = data.subarray(lineStart);
    return lines;
  }

  private async reopen(offset: number): Promise<void> {
    await this.handle?.close();
    this.handle = await open(this.path, 'r');
    this.inode = (await this.handle.stat()).ino;
    this.offset = offset;
    this.partial = Buffer.alloc(0);
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }
}
