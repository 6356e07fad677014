import { spawn, type ChildProcess } from 'node:child_process';
import type { LineSource, SourceHealth, SourceLine } from './line-source.ts';

/**
 * A following command: `journalctl -k -f -o short-iso` or `dmesg -w --time-format iso`.
 * Positions count lines since the command started; on restart the command replays from where
 * its own options say, and events get the same ids only for sources with a cursor (file, kmsg).
 */
export class CommandLineSource implements LineSource {
  readonly id: string;
  private child: ChildProcess | undefined;
  private pending: SourceLine[] = [];
  private partial = '';
  private counter = 0;
  private ended: { message: string; since: number } | undefined;
  private closing = false;

  constructor(
    private readonly command: string,
    private readonly args: readonly string[],
  ) {
    this.id = `command:${command}`;
  }

  open(from: number | undefined): void {
    this.counter = from ?? 0;
    const child = spawn(this.command, this.args, { stdio: ['ignore', 'pipe', 'ignore'] });
    this.ended = undefined;
    child.on('error', (error: NodeJS.ErrnoException) => {
      this.ended = { message: `${this.command} could not run: ${error.code ?? error.message}`, since: Date.now() };
    });
    child.on('exit', (code, signal) => {
      if (this.closing) return;
      this.ended ??= { message: `${this.command} exited (${signal ?? `code ${String(code)}`}): nothing more will be read`, since: Date.now() };
    });
    child.stdout.on('data', (chunk: Buffer) => {
      const text = this.partial + chunk.toString('utf8');
      const parts = text.split('\n');
      this.partial = parts.pop() ?? '';
      for (const line of parts) {
        this.pending.push({ text: line, position: this.counter, next: this.counter + 1 });
        this.counter += 1;
      }
    });
    this.child = child;
  }

  async read(): Promise<SourceLine[]> {
    const lines = this.pending;
    this.pending = [];
    return lines;
  }

  health(): SourceHealth {
    return this.ended ? { ok: false, ...this.ended } : { ok: true };
  }

  async close(): Promise<void> {
    this.closing = true;
    this.child?.kill('SIGTERM');
  }
}
