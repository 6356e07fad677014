import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { LineSource, SourceLine } from './line-source.ts';

/**
 * /dev/kmsg: one record per read, `pri,seq,usec,flags;message` then indented dictionary lines.
 * Positions are sequence numbers, so a restart skips what it already published and a gap
 * (records the ring buffer overwrote) is visible.
 */
export class KmsgLineSource implements LineSource {
  readonly id = 'kmsg';
  private handle: FileHandle | undefined;
  private after: number | undefined;
  private readonly buffer = Buffer.alloc(16 * 1024);

  constructor(private readonly path = '/dev/kmsg') {}

  open(from: number | undefined): void {
    this.after = from === undefined ? undefined : from - 1;
  }

  async read(): Promise<SourceLine[]> {
    this.handle ??= await open(this.path, constants.O_RDONLY | constants.O_NONBLOCK);
    const lines: SourceLine[] = [];
    for (let i = 0; i < 1000; i += 1) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await this.handle.read(this.buffer, 0, this.buffer.length, null));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') break; // nothing more for now
        if (code === 'EPIPE') continue; // records were overwritten before we read them
        throw error;
      }
      if (bytesRead === 0) break;
      const record = this.buffer.subarray(0, bytesRead).toString('utf8');
      const seq = Number(/^\d+,(\d+),/.exec(record)?.[1]);
      if (!Number.isFinite(seq) || (this.after !== undefined && seq <= this.after)) continue;
      const [first = '', ...dictionary] = record.replace(/\n$/, '').split('\n'); // split gives one at least
      lines.push({ text: first, position: seq, next: seq + 1 });
      for (const entry of dictionary) lines.push({ text: entry, position: seq, next: seq + 1 });
    }
    return lines;
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }
}
