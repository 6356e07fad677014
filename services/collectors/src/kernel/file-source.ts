import { watch, type FSWatcher } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { LineSource, SourceHealth, SourceLine } from './line-source.ts';

/** How often a watched file is read anyway, in case a change event was missed. */
const WATCHED_POLL_MS = 1_000;

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
  private watcher: FSWatcher | undefined;
  private wake: (() => void) | undefined;
  /** The folder changed since the last read began: the next wait returns at once (the change may be a line that read missed). */
  private changed = false;
  /** Since when the file has not been there (a rotation takes milliseconds; a deleted log, for ever). */
  private missingSince: number | undefined;

  /** `watchedPollMs`: how often a watched file is read anyway (a test sets it long, to see the watcher alone wake it). */
  constructor(
    path: string,
    private readonly watchedPollMs = WATCHED_POLL_MS,
  ) {
    this.path = path;
    this.id = `file:${path}`;
  }

  open(from: number | undefined): void {
    this.offset = from ?? 0;
  }

  async read(): Promise<SourceLine[]> {
    this.changed = false;
    let info;
    try {
      info = await stat(this.path);
    } catch {
      this.missingSince ??= Date.now();
      return []; // not there (yet, or during rotation)
    }
    this.missingSince = undefined;
    if (this.inode !== undefined && info.ino !== this.inode) {
      await this.reopen(0); // replaced by rotation: the new file starts at 0
    } else if (info.size < this.offset + this.partial.length) {
      await this.reopen(0); // truncated
    }
    const handle = this.handle ?? (await this.reopen(this.offset));
    const start = this.offset + this.partial.length;
    const length = info.size - start;
    if (length <= 0) return [];
    const buffer = Buffer.alloc(Math.min(length, 4 * 1024 * 1024));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, start);
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

  /**
   * Sleeps until the file's folder changes (inotify: an append, a rotation, a new file) or `ms`
   * pass. Watching the folder, not the file, sees a rotated-in file too. Idle, the collector costs
   * nothing but this wait; a poll alone would stat the file twenty times a second.
   */
  async waitForLines(ms: number): Promise<void> {
    if (!this.watcher) {
      try {
        this.watcher = watch(dirname(this.path), { persistent: false }, () => {
          this.changed = true;
          this.wake?.();
        });
        this.watcher.on('error', () => this.stopWatching());
        // A line appended between the last read and now had no watcher to tell of it: read again first.
        return;
      } catch {
        this.watcher = undefined; // no inotify here (some network filesystems): plain polling
      }
    }
    // A change between the last read and this wait (a line appended while it was read) is read now, not after a second.
    if (this.changed) return;
    // With a watcher, a missed event costs at most a second; without one, the caller's interval. A
    // shorter wait is the caller's to ask (an open burst must close on time: an Xid waits out its
    // 300 ms gap, then goes at the next wake, not at the next second).
    const timeout = this.watcher ? Math.min(ms, this.watchedPollMs) : ms;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeout);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
    this.wake = undefined;
  }

  health(): SourceHealth {
    return this.missingSince === undefined ? { ok: true } : { ok: false, message: `${this.path} is not there`, since: this.missingSince };
  }

  private stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.wake?.();
  }

  private async reopen(offset: number): Promise<FileHandle> {
    await this.handle?.close();
    const handle = await open(this.path, 'r');
    this.handle = handle;
    this.inode = (await handle.stat()).ino;
    this.offset = offset;
    this.partial = Buffer.alloc(0);
    return handle;
  }

  async close(): Promise<void> {
    this.stopWatching();
    await this.handle?.close();
    this.handle = undefined;
  }
}
