import { spawn, type ChildProcess } from 'node:child_process';
import type { LineSource, SourceLine } from '../kernel/line-source.ts';
import { MAX_JOB_LINE_LENGTH } from './match-job-line.ts';

/** Lines held between reads: a trainer printing faster than they are read loses the oldest half past this, counted. */
export const MAX_PENDING_JOB_LINES = 100_000;

/**
 * Runs a training command (`sh -c CMD`) and reads its standard output and error as lines, while
 * passing both through, so wrapping a job changes nothing its user sees. `exited` resolves with
 * the command's exit status (128 + signal number when a signal ended it).
 */
export class CommandJobSource implements LineSource {
  readonly id: string;
  readonly exited: Promise<number>;
  private child: ChildProcess | undefined;
  private pending: SourceLine[] = [];
  private counter = 0;
  private resolveExit: (code: number) => void = () => {};
  /** Lines dropped because they came faster than they were read. */
  dropped = 0;

  constructor(
    private readonly command: string,
    private readonly passThrough: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream } | undefined,
  ) {
    this.id = `command:${command.slice(0, 200)}`;
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  open(): void {
    const child = spawn('/bin/sh', ['-c', this.command], { stdio: ['inherit', 'pipe', 'pipe'] });
    const follow = (stream: NodeJS.ReadableStream, out: NodeJS.WritableStream | undefined) => {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        out?.write(chunk);
        const parts = (partial + chunk).split('\n');
        partial = parts.pop() ?? '';
        if (partial.length > MAX_JOB_LINE_LENGTH) {
          parts.push(partial); // a line with no end in sight is read as it stands
          partial = '';
        }
        for (const text of parts) this.push(text);
      });
      stream.on('end', () => {
        if (partial !== '') this.push(partial);
      });
    };
    follow(child.stdout, this.passThrough?.stdout);
    follow(child.stderr, this.passThrough?.stderr);
    child.on('error', () => this.resolveExit(127));
    child.on('close', (code, signal) => this.resolveExit(code ?? 128 + (signal ? signalNumber(signal) : 0)));
    this.child = child;
  }

  private push(text: string): void {
    if (this.pending.length >= MAX_PENDING_JOB_LINES) {
      const half = MAX_PENDING_JOB_LINES / 2; // half at once: one splice per 50,000 lines, not one shift per line
      this.pending.splice(0, half);
      this.dropped += half;
    }
    this.pending.push({ text, position: this.counter, next: this.counter + 1 });
    this.counter += 1;
  }

  async read(): Promise<SourceLine[]> {
    const lines = this.pending;
    this.pending = [];
    return lines;
  }

  /** Stops the command (SIGTERM) if it still runs. */
  async close(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGABRT: 6, SIGKILL: 9, SIGSEGV: 11, SIGPIPE: 13, SIGTERM: 15 };
  return numbers[signal] ?? 0;
}
